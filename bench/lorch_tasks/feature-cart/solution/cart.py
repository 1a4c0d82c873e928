"""A shopping cart."""


class Cart:
    """Items by name, each with a unit price and a quantity."""

    def __init__(self):
        self.items = {}  # name -> [unit price, quantity]

    def add(self, name, price, quantity=1):
        """Add quantity units of an item; adding an item again raises its quantity."""
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        if name in self.items:
            self.items[name][1] += quantity
        else:
            self.items[name] = [price, quantity]

    def remove(self, name, quantity=1):
        """Take quantity units of an item out; the item goes when none are left."""
        if name not in self.items:
            raise KeyError(name)
        self.items[name][1] -= quantity
        if self.items[name][1] <= 0:
            del self.items[name]

    def total(self):
        """The price of everything in the cart."""
        return sum(price * quantity for price, quantity in self.items.values())
