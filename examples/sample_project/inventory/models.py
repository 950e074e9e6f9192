"""Data types of the inventory: an item and the warehouse that holds items."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Item:
    """One kind of goods: its stock-keeping unit, name, unit price and quantity."""

    sku: str
    name: str
    unit_price: float
    quantity: int = 0

    def value(self) -> float:
        """What the items of this kind in stock are worth."""
        return self.unit_price * self.quantity


@dataclass
class Warehouse:
    """A named place that holds items, keyed by SKU."""

    name: str
    items: dict[str, Item] = field(default_factory=dict)

    def add(self, item: Item) -> None:
        """Add an item, or replace the item with the same SKU."""
        self.items[item.sku] = item

    def get(self, sku: str) -> Item | None:
        return self.items.get(sku)

    def __len__(self) -> int:
        return len(self.items)
