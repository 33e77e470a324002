package speedy.interop.netty;

import java.util.Arrays;

/**
 * Entry point of the Netty SPDY/3.1 interop peer.
 *
 * <pre>
 *   java -jar netty-peer.jar server [server.js arguments]
 *   java -jar netty-peer.jar client URL... [client.js arguments]
 * </pre>
 *
 * The first argument selects the role; the rest follow the command-line contract of
 * interop/server.js and interop/client.js (the node-spdy peers).
 */
public final class Main {
    private Main() {
    }

    public static void main(String[] args) {
        if (args.length == 0) {
            usage();
        }
        String[] rest = Arrays.copyOfRange(args, 1, args.length);
        switch (args[0]) {
            case "server":
                PeerServer.main(rest);
                break;
            case "client":
                PeerClient.main(rest);
                break;
            case "--help":
            case "-h":
                usage();
                break;
            default:
                System.err.println("netty-peer: first argument must be `server` or `client`, not `" + args[0] + "`");
                usage();
        }
    }

    private static void usage() {
        System.err.println("usage: java -jar netty-peer.jar server [--host H] [--port N] [--tls|--plain] --root DIR "
                + "[--protocols spdy/3.1] [--auto-spdy31] [--reset-path PATH]... [--push PAGE=P1,P2]... [--verbose]");
        System.err.println("       java -jar netty-peer.jar client URL... [--protocol spdy/3.1] [--concurrency N] "
                + "[--post FILE] [--expect-error URL]... [--timeout SECONDS] [--verbose]");
        System.exit(2);
    }
}
