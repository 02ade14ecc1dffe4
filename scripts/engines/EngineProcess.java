import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/** What both launchers share with engines.py: the ready file, and stopping when standard input closes. */
final class EngineProcess {
    private EngineProcess() {}

    /** Writes {@code json} to {@code ready} atomically: engines.py never reads half a file. */
    static void announce(Path ready, String json) throws IOException {
        Path partial = ready.resolveSibling(ready.getFileName() + ".partial");
        Files.writeString(partial, json + "\n", StandardCharsets.UTF_8);
        Files.move(partial, ready, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    /** Blocks until standard input ends (the runner closed the pipe, or died), then exits: shutdown hooks run. */
    static void runUntilInputCloses() {
        InputStream in = System.in;
        byte[] buffer = new byte[256];
        try {
            while (in.read(buffer) >= 0) {
                // Input is ignored: only its end matters.
            }
        } catch (IOException error) {
            // A broken pipe is an end too.
        }
        System.exit(0);
    }
}
