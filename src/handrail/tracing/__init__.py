"""OpenTelemetry tracing, metrics and run recordings for handrail runs, as observers of the drivers (in progress)."""
