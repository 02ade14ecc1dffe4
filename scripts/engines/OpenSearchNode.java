import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import org.opensearch.analysis.common.CommonAnalysisPlugin;
import org.opensearch.common.logging.LogConfigurator;
import org.opensearch.common.settings.Settings;
import org.opensearch.core.common.transport.TransportAddress;
import org.opensearch.env.Environment;
import org.opensearch.http.HttpServerTransport;
import org.opensearch.index.reindex.ReindexPlugin;
import org.opensearch.knn.plugin.KNNPlugin;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.painless.PainlessPlugin;
import org.opensearch.plugins.Plugin;
import org.opensearch.transport.Netty4Plugin;

/**
 * A single-node OpenSearch for the tests: the server's own {@link Node} with its modules and the k-NN plugin
 * loaded from the classpath (how OpenSearch's integration-test framework starts nodes), bound to 127.0.0.1 on
 * ports the operating system picks.
 *
 * <p>Usage: {@code OpenSearchNode HOME READY_FILE}. HOME holds data and logs. Once the REST port answers, the
 * launcher writes {@code {"url": "http://127.0.0.1:PORT"}} to READY_FILE (atomically). It stops when its
 * standard input closes, so a test run that dies never leaves a node behind.
 */
public final class OpenSearchNode {
    /** What the distribution would load from modules/ (HTTP, scripts, analyzers, delete-by-query) and plugins/. */
    static final List<Class<? extends Plugin>> PLUGINS = List.of(
        Netty4Plugin.class, PainlessPlugin.class, CommonAnalysisPlugin.class, ReindexPlugin.class, KNNPlugin.class);

    /** Node's constructor that takes classpath plugins is protected: this is all the subclass adds. */
    static final class ClasspathNode extends Node {
        ClasspathNode(Environment environment) {
            super(environment, PLUGINS, true);
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: OpenSearchNode HOME READY_FILE");
            System.exit(2);
        }
        Path home = Path.of(args[0]).toAbsolutePath();
        Path ready = Path.of(args[1]).toAbsolutePath();
        Files.createDirectories(home.resolve("config"));
        Settings settings = Settings.builder()
            .put("path.home", home.toString())
            .put("path.data", home.resolve("data").toString())
            .put("path.logs", home.resolve("logs").toString())
            .put("cluster.name", "ragline-test")
            .put("node.name", "ragline-test")
            .put("discovery.type", "single-node")
            .put("network.host", "127.0.0.1")
            .put("http.port", "0")
            .put("transport.port", "0")
            // The machine's disk is shared: a watermark reached by others must not make our indices read-only.
            .put("cluster.routing.allocation.disk.threshold_enabled", false)
            .put("action.auto_create_index", false)
            .build();
        LogConfigurator.configureWithoutConfig(settings);
        Environment environment = InternalSettingsPreparer.prepareEnvironment(
            settings, Map.of(), home.resolve("config"), () -> "ragline-test");
        Node node = new ClasspathNode(environment);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> close(node)));
        node.start();

        TransportAddress address = node.injector().getInstance(HttpServerTransport.class).boundAddress().publishAddress();
        String url = "http://" + address.getAddress() + ":" + address.getPort();
        EngineProcess.announce(ready, "{\"url\": \"" + url + "\"}");
        System.out.println("opensearch ready at " + url);

        EngineProcess.runUntilInputCloses();
    }


    static void close(Node node) {
        try {
            node.close();
        } catch (IOException error) {
            System.err.println("opensearch: close failed: " + error);
        }
    }
}
