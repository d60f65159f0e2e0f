"""The approval service: ``handrail serve`` and ``handrail worker``.

``handrail serve`` is an HTTP API where people decide paused tool calls; ``handrail worker`` (and every server)
resumes runs by themselves once their calls are decided.

Everything lives in the snapshot store (approvals, tokens, events, runs), so any number of server and worker
processes sharing one store agree. The HTTP API needs the ``server`` extra (``pip install 'handrail[server]'``);
the resumer does not.
"""

__all__: list[str] = []
