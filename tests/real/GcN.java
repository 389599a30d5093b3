// GcN N: the JVM workload of side_by_side.sh's javagc row. Says "ready", waits for a line on
// stdin, calls System.gc() N times (with -XX:+UseSerialGC: N full collections, each one
// event of javagc: hotspot's gc__begin/mem__pool__gc__begin probes are always enabled, no
// -XX:+ExtendedDTraceProbes needed), says "done", waits for another line, exits.
import java.io.BufferedReader;
import java.io.InputStreamReader;

public class GcN {
    public static void main(String[] args) throws Exception {
        int n = Integer.parseInt(args[0]);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        System.out.println("ready");
        System.out.flush();
        in.readLine();
        for (int i = 0; i < n; i++) {
            System.gc();
        }
        System.out.println("done");
        System.out.flush();
        in.readLine();
    }
}
