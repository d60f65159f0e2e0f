"""Routers: components that send their inputs down one of several branches of a pipeline."""

from handrail.components.routers.conditional_router import (
    ConditionalRouter,
    NoRouteSelectedException,
    RouteConditionException,
)

__all__ = ["ConditionalRouter", "NoRouteSelectedException", "RouteConditionException"]
