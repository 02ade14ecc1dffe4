"""The per-request event bus that stages publish to."""

from ragline.event.bus import BusEvent, BusEventType, EventBus

__all__ = ["BusEvent", "BusEventType", "EventBus"]
