"""Prices: discounts on single items and the value of a whole warehouse."""

from __future__ import annotations

from dataclasses import replace

from inventory.models import Item, Warehouse

VAT_RATE = 0.2


def apply_discount(item: Item, percent: float) -> Item:
    """The same item with its unit price lowered by `percent` (0-100)."""
    if not 0 <= percent <= 100:
        raise ValueError(f"discount must be between 0 and 100, got {percent}")
    return replace(item, unit_price=round(item.unit_price * (1 - percent / 100), 2))


def total_value(warehouse: Warehouse) -> float:
    """The value of everything in the warehouse, before tax."""
    return sum(item.value() for item in warehouse.items.values())


def with_vat(amount: float) -> float:
    """An amount with value-added tax added."""
    return round(amount * (1 + VAT_RATE), 2)
