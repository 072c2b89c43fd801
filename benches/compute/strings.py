# String building: concatenation, f-strings, join and a few methods.
s = ""
parts: list = []
for i in range(200000):
    s += "x"
    parts.append(f"item{i}")
joined = ",".join(parts)
print(len(s), len(joined), joined[:20], joined.upper()[-10:])
