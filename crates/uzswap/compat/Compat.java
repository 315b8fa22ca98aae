// uzswap compat `java-nio` and `java-heap`.
//   java Compat nio BYTES FILE: a direct ByteBuffer written to FILE through a
//     FileChannel, read back into another direct buffer, both hashed.
//   java Compat heap ELEMENTS: a long[] on the Java heap filled, sorted and
//     summed.
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.HexFormat;

public class Compat {
    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "nio" -> nio(Integer.parseInt(args[1]), Path.of(args[2]));
            case "heap" -> heap(Integer.parseInt(args[1]));
            default -> throw new IllegalArgumentException("nio or heap, not " + args[0]);
        }
    }

    static String sha256(ByteBuffer b) throws Exception {
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        md.update(b.duplicate().position(0));
        return HexFormat.of().formatHex(md.digest());
    }

    static void nio(int n, Path file) throws Exception {
        ByteBuffer b = ByteBuffer.allocateDirect(n).order(ByteOrder.LITTLE_ENDIAN);
        long x = 0x9E3779B97F4A7C15L;
        for (int i = 0; i + 8 <= n; i += 8) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
            b.putLong(i, (x & 0x0f0f0f0f0f0f0f0fL) | 0x4040404040404040L);
        }
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE,
                StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
            b.position(0);
            while (b.hasRemaining()) {
                ch.write(b);
            }
        }
        ByteBuffer r = ByteBuffer.allocateDirect(n);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            while (r.hasRemaining() && ch.read(r) >= 0) {
            }
        }
        b.position(0);
        r.position(0);
        System.out.println(n + " " + sha256(b) + " " + sha256(r) + " " + b.equals(r));
    }

    static void heap(int n) {
        long[] a = new long[n];
        long x = 0x2545F4914F6CDD1DL;
        for (int i = 0; i < n; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            a[i] = x >>> 16;
        }
        long before = 0;
        for (int i = 0; i < n; i++) {
            before += a[i] * (i | 1);
        }
        Arrays.sort(a);
        long after = 0;
        for (int i = 0; i < n; i++) {
            after += a[i] * (i | 1);
        }
        System.out.println(n + " " + before + " " + after + " " + a[0] + " " + a[n / 2] + " " + a[n - 1]);
    }
}
