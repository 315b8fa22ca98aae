#!/bin/sh
# Does this kernel's cgroup v1 memcg charge zswap's compressed pool?
# (root; swap must be off.) Holds 256 MiB of compressible bytes in a 64 MiB
# v1 memcg with kernel zswap (lzo-rle) on, then prints the memcg's usage
# beside the pool's size: if the pool were charged, usage would include it
# and total_rss would be smaller by as much. Restores zswap and swap after.
set -eu
CG=/sys/fs/cgroup/memory/uzswap-v1-charge
F=/var/tmp/uzswap-v1-charge.swap
Z=/sys/module/zswap/parameters
[ -f /sys/fs/cgroup/memory/memory.limit_in_bytes ] || { echo "no cgroup v1 memory controller"; exit 2; }
[ "$(wc -l < /proc/swaps)" -le 1 ] || { echo "swap is on already; turn it off first"; exit 2; }
OLD_ENABLED=$(cat $Z/enabled)
OLD_COMP=$(sed 's/.*\[\(.*\)\].*/\1/' $Z/compressor)
cleanup() {
    rmdir $CG 2>/dev/null || true
    swapoff $F 2>/dev/null || true
    rm -f $F
    echo "$OLD_ENABLED" > $Z/enabled
    echo "$OLD_COMP" > $Z/compressor
}
trap cleanup EXIT
echo Y > $Z/enabled
echo lzo-rle > $Z/compressor
fallocate -l 1G $F; chmod 600 $F; mkswap $F >/dev/null; swapon $F
mkdir $CG; echo 64M > $CG/memory.limit_in_bytes
sh -c "echo \$\$ > $CG/cgroup.procs; exec /usr/bin/python3 -c '
import time
b = bytearray(b\"0123456789abcdef\" * (16 << 20))
for i in range(0, len(b), 4096): b[i] = i % 251
time.sleep(3)'" &
sleep 2.5
echo "memcg usage: $(($(cat $CG/memory.usage_in_bytes) >> 20)) MiB (limit 64 MiB)"
grep -E "^(total_rss|total_swap|total_cache) " $CG/memory.stat | awk '{printf "%s %d MiB\n", $1, $2/1048576}'
grep -E "^Zswap" /proc/meminfo
wait
