// uzswap compat `node-buffer`: fill a large Buffer, write it to a file with
// fs.writeFileSync, read it back with fs.readFileSync and hash both.
// Usage: node node_buffer.js BYTES FILE
"use strict";
const fs = require("fs");
const crypto = require("crypto");

const n = Number(process.argv[2]);
const file = process.argv[3];
const b = Buffer.alloc(n);
let x = 0x9e3779b9 >>> 0;
for (let i = 0; i + 4 <= n; i += 4) {
  x ^= x << 13;
  x >>>= 0;
  x ^= x >>> 17;
  x ^= x << 5;
  x >>>= 0;
  b.writeUInt32LE(((x & 0x0f0f0f0f) | 0x40404040) >>> 0, i);
}
fs.writeFileSync(file, b);
const r = fs.readFileSync(file);
const hash = (buf) => crypto.createHash("sha256").update(buf).digest("hex");
console.log(n, r.length, hash(b), hash(r), b.equals(r));
