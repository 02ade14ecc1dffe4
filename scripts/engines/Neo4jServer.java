import java.nio.file.Path;
import java.util.Map;

import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.ConnectorPortRegister;
import org.neo4j.configuration.connectors.ConnectorType;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.io.ByteUnit;
import org.neo4j.kernel.internal.GraphDatabaseAPI;

/**
 * A Neo4j 5 community DBMS for the tests: the embedded database management service with its Bolt connector
 * on 127.0.0.1 (a port the operating system picks) and authentication on, as a server runs it.
 *
 * <p>Usage: {@code Neo4jServer HOME READY_FILE PASSWORD}. HOME holds the databases. The user {@code neo4j}
 * gets PASSWORD; once Bolt listens the launcher writes {@code {"uri": "bolt://127.0.0.1:PORT"}} to READY_FILE
 * (atomically). It stops when its standard input closes, so a test run that dies never leaves it behind.
 */
public final class Neo4jServer {
    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: Neo4jServer HOME READY_FILE PASSWORD");
            System.exit(2);
        }
        Path home = Path.of(args[0]).toAbsolutePath();
        Path ready = Path.of(args[1]).toAbsolutePath();
        String password = args[2];
        DatabaseManagementService dbms = new DatabaseManagementServiceBuilder(home)
            .setConfig(BoltConnector.enabled, true)
            .setConfig(BoltConnector.listen_address, new SocketAddress("127.0.0.1", 0))
            .setConfig(BoltConnector.encryption_level, BoltConnector.EncryptionLevel.DISABLED)
            .setConfig(GraphDatabaseSettings.auth_enabled, true)
            // Small and fixed: the default page cache takes half of the machine's free memory.
            .setConfig(GraphDatabaseSettings.pagecache_memory, ByteUnit.mebiBytes(64))
            .setConfig(GraphDatabaseSettings.keep_logical_logs, "false")
            .build();
        Runtime.getRuntime().addShutdownHook(new Thread(dbms::shutdown));

        GraphDatabaseService system = dbms.database(GraphDatabaseSettings.SYSTEM_DATABASE_NAME);
        system.executeTransactionally(
            "ALTER USER neo4j SET PASSWORD $password CHANGE NOT REQUIRED", Map.of("password", password));

        GraphDatabaseService neo4j = dbms.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME);
        ConnectorPortRegister ports =
            ((GraphDatabaseAPI) neo4j).getDependencyResolver().resolveDependency(ConnectorPortRegister.class);
        var address = ports.getLocalAddress(ConnectorType.BOLT);
        String uri = "bolt://127.0.0.1:" + address.getPort();
        EngineProcess.announce(ready, "{\"uri\": \"" + uri + "\"}");
        System.out.println("neo4j ready at " + uri);

        EngineProcess.runUntilInputCloses();
    }

}
