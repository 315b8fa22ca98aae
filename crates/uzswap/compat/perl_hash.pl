# uzswap compat `perl-hash`: a Perl program made of small objects. Builds
# a hash of KEYS keys, each an array of three scalars (a number, a string,
# a number), then walks it in sorted key order and sums a field: random
# access over every key, bucket and value (Perl's hash order is random;
# the sort's order is not). Prints every quarter's key and the totals, the
# same under any pager.
# Usage: perl perl_hash.pl KEYS
use strict;
use warnings;

my $keys = shift @ARGV or die "usage: perl perl_hash.pl KEYS\n";
my %h;
for my $i (1 .. $keys) {
    $h{"key$i" x 3} = [$i, "value$i" x 4, $i * 2];
}
my ($sum, $n) = (0, 0);
my $every = int($keys / 4) || 1;
for my $k (sort keys %h) {
    $sum += $h{$k}[0] + length($h{$k}[1]);
    $n++;
    print "$k\n" if $n % $every == 0;
}
print "$n $sum\n";
