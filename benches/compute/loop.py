# A 1,000,000-iteration loop with `%`, `+=` and a dict insert per 1,000 iterations.
total = 0
seen: dict = {}
for i in range(1000000):
    total += i % 7
    if i % 1000 == 0:
        seen[i] = total
print("total", total, "keys", len(seen))
