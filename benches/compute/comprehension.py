# List and dict comprehensions over 200,000 elements, ten rounds.
total = 0
for r in range(10):
    xs = [i * 3 + r for i in range(200000) if i % 3 != 0]
    d = {i: x for (i, x) in enumerate(xs) if x % 2 == 0}
    total += len(xs) + len(d)
print("total", total)
