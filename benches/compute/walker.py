# A walker visiting 100,000 nodes in memory: 100 hubs of 999 items under root, as
# plain Python objects (nodes with an edge list, a walker with a visit queue).
from collections import deque


class Node:
    def __init__(self):
        self.edges = []


class Root(Node):
    pass


class Hub(Node):
    def __init__(self, n: int):
        super().__init__()
        self.n = n


class Item(Node):
    def __init__(self, n: int):
        super().__init__()
        self.n = n


class Count:
    def __init__(self):
        self.hubs = 0
        self.items = 0

    def spawn(self, start: Node) -> None:
        queue = deque([start])
        while queue:
            here = queue.popleft()
            if isinstance(here, Root):
                queue.extend(here.edges)
            elif isinstance(here, Hub):
                self.hubs += 1
                queue.extend(here.edges)
            elif isinstance(here, Item):
                self.items += here.n % 2


root = Root()
for h in range(100):
    hub = Hub(n=h)
    root.edges.append(hub)
    for i in range(999):
        hub.edges.append(Item(n=i))
w = Count()
w.spawn(root)
print("hubs", w.hubs, "odd items", w.items)
