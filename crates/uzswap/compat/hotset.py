# A service with a small hot set (`uzswap bench savings` python-service)
# builds N dict records, then makes LOOKUPS lookups, 99%
# of them to the hottest 5%, bumping a score every 1000th; prints a
# checksum that is the same under any pager.
# Usage: python3 hotset.py [N [LOOKUPS]]
import random, sys
n = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000_000
lookups = int(sys.argv[2]) if len(sys.argv) > 2 else 3_000_000
random.seed(7)
recs = [{"id": i, "name": "user%08d" % i, "score": i * 7 % 1000, "tags": ["t%d" % (i % 13), "g%d" % (i % 7)]} for i in range(n)]
hot = n // 20
acc = 0
r = random.random
for k in range(lookups):
    i = int(r() * hot) if r() < 0.99 else int(r() * n)
    rec = recs[i]
    acc += rec["score"] + len(rec["name"])
    if k % 1000 == 0:
        rec["score"] += 1
print(acc, sum(x["score"] for x in recs[::1000]))
