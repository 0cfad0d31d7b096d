"""Chat clients: one module per wire protocol, all implementing `ChatClient`."""

from vera.clients.base import CallContext, ChatClient

__all__ = ["CallContext", "ChatClient"]
