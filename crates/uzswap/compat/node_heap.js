// uzswap compat `node-heap`: N small objects on V8's heap (reserved
// PROT_NONE, committed page by page with mprotect), hashed twice over.
// Usage: node node_heap.js N
"use strict";
const crypto = require("crypto");

const n = Number(process.argv[2]);
const a = [];
for (let i = 0; i < n; i++) {
  a.push({ i, s: "item-" + ((i * 7919) % 1000003), f: i / 3 });
}
const h = crypto.createHash("sha256");
for (let r = 0; r < 2; r++) {
  for (const o of a) h.update(o.s + o.i + o.f);
}
console.log(a.length, h.digest("hex"));
