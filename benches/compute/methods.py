# Method calls on objects: 500,000 calls reading and writing fields.
class Counter:
    def __init__(self, count: int = 0, step: int = 1):
        self.count = count
        self.step = step

    def bump(self, k: int) -> int:
        self.count += self.step * k
        return self.count


c = Counter(step=2)
last = 0
for i in range(500000):
    last = c.bump(i % 3)
print("count", c.count, "last", last)
