import Foundation
import LocalCluster
import Testing

/// PostgreSQL is installed, or this is CI, where a missing PostgreSQL must fail the tests rather than skip them.
private let canRunClusters = PostgresBinaries.isAvailable || ProcessInfo.processInfo.environment["CI"] == "true"

@Suite("LocalCluster", .serialized, .enabled(if: canRunClusters))
struct ClusterTests {
    /// A throwaway, non-durable cluster in a fresh directory under /tmp (searchable by the postgres OS user).
    private func makeCluster(port: Int = Cluster.freePort()) throws -> Cluster {
        let directory = "/tmp/localcluster-test-\(UUID().uuidString.prefix(8).lowercased())"
        return try Cluster(directory: directory, port: port, options: .init(durable: false))
    }

    /// Runs `psql -c SQL` against `url` the way a user would, and returns its trimmed output.
    private func psql(_ cluster: Cluster, url: String, _ sql: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: cluster.binaries.psql)
        process.arguments = ["-X", "-w", "-A", "-t", "-d", url, "-c", sql]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func freePortIsInRangeAndBindable() {
        let port = Cluster.freePort()
        #expect((1024...65_535).contains(port))
    }

    @Test func locatesEveryProgram() throws {
        let binaries = try PostgresBinaries.locate()
        for path in [binaries.initdb, binaries.pgCtl, binaries.postgres, binaries.psql, binaries.createdb] {
            #expect(FileManager.default.isExecutableFile(atPath: path), "\(path)")
        }
    }

    @Test func pgBinWinsAndAMissingOneIsExplained() throws {
        let found = try PostgresBinaries.locate()
        let pinned = try PostgresBinaries.locate(environment: ["PG_BIN": found.directory, "PATH": ""])
        #expect(pinned == found)
        let error = #expect(throws: ClusterError.self) {
            try PostgresBinaries.locate(environment: ["PG_BIN": "/nonexistent/bin"])
        }
        #expect(error?.code == .binariesNotFound)
        #expect(error?.message.contains("postgresql-15") == true)
    }

    @Test(arguments: ["", "Upper", "with-dash", "semi;colon", "quote\"d", String(repeating: "a", count: 64)])
    func rejectsBadDatabaseNames(_ name: String) {
        let error = #expect(throws: ClusterError.self) { try Cluster.validateName(name) }
        #expect(error?.code == .invalidName)
    }

    @Test func acceptsPlainDatabaseNames() throws {
        try Cluster.validateName("fbs_template_01")
    }

    @Test func rejectsDirectoriesTheShellWouldMangle() {
        let error = #expect(throws: ClusterError.self) {
            try Cluster(directory: "/tmp/it's", port: 5999)
        }
        #expect(error?.code == .invalidDirectory)
    }

    @Test func connectionURLNamesHostPortAndDatabase() throws {
        let cluster = try Cluster(directory: "/tmp/localcluster-test-url", port: 5999)
        #expect(cluster.connectionURL(database: "app") == "postgresql://postgres@127.0.0.1:5999/app")
        #expect(cluster.connectionURL() == "postgresql://postgres@127.0.0.1:5999/postgres")
    }

    @Test func startBeforeInitializeIsAnError() throws {
        let cluster = try makeCluster()
        defer { try? cluster.remove() }
        let error = #expect(throws: ClusterError.self) { try cluster.start() }
        #expect(error?.code == .notInitialized)
    }

    @Test func createsQueriesRestartsAndKeepsData() throws {
        let cluster = try makeCluster()
        defer { try? cluster.remove() }

        #expect(try cluster.initializeIfNeeded())
        #expect(try !cluster.initializeIfNeeded())
        #expect(!cluster.isRunning)
        try cluster.start()
        #expect(cluster.isRunning)
        try cluster.start()  // already running on this port: nothing to do

        try cluster.createDatabase("lc_app")
        #expect(try cluster.databaseExists("lc_app"))
        #expect(try psql(cluster, url: cluster.connectionURL(database: "lc_app"), "select 1") == "1")
        try cluster.runSQL("create table kept (name text); insert into kept values ('survivor')", database: "lc_app")

        try cluster.stop()
        #expect(!cluster.isRunning)
        try cluster.stop()  // not running: nothing to do

        // A new value for the same directory, as the next `fbsessiond run` would make: reuse, not re-init.
        let reused = try Cluster(directory: cluster.directory, port: cluster.port, options: cluster.options)
        #expect(try !reused.initializeIfNeeded())
        try reused.start()
        #expect(try reused.runSQL("select name from kept", database: "lc_app") == "survivor")
        #expect(try psql(reused, url: reused.connectionURL(database: "lc_app"), "select count(*) from kept") == "1")

        try reused.createDatabase("lc_copy", template: "lc_app")
        #expect(try reused.runSQL("select name from kept", database: "lc_copy") == "survivor")
        try reused.dropDatabase("lc_copy")
        #expect(try !reused.databaseExists("lc_copy"))
        try reused.dropDatabase("lc_copy")  // IF EXISTS

        try reused.stop(mode: .fast)
        #expect(!reused.isRunning)
    }

    @Test func startsAfterACrashLeftAStaleLockFile() throws {
        let cluster = try makeCluster()
        defer { try? cluster.remove() }
        try cluster.initializeIfNeeded()
        try cluster.start()
        try cluster.runSQL("create table before_crash (n int)")

        // Kill the postmaster outright: postmaster.pid stays behind, naming a dead process.
        let lockFile = cluster.dataDirectory + "/postmaster.pid"
        let lock = try String(contentsOfFile: lockFile, encoding: .utf8)
        let pid = try #require(Int32(lock.split(separator: "\n").first ?? ""))
        #expect(kill(pid, SIGKILL) == 0)
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(20)
        while kill(pid, 0) == 0, clock.now < deadline {
            Thread.sleep(forTimeInterval: 0.05)
        }
        #expect(FileManager.default.fileExists(atPath: lockFile))
        #expect(!cluster.isRunning)

        // The orphaned backends exit on their own when they notice; until then the server may refuse to start.
        var started = false
        while !started, clock.now < deadline {
            started = (try? cluster.start()) != nil
            if !started { Thread.sleep(forTimeInterval: 0.25) }
        }
        if !started { try cluster.start() }  // report the real error
        #expect(try cluster.runSQL("select count(*) from before_crash") == "0")
        try cluster.stop()
    }

    @Test func startsOverALockFileNamingAnUnrelatedProcess() throws {
        let cluster = try makeCluster()
        defer { try? cluster.remove() }
        try cluster.initializeIfNeeded()
        // This test process is alive and is not PostgreSQL, like a reused process id after a reboot.
        let lock = "\(getpid())\n\(cluster.dataDirectory)\n0\n\(cluster.port)\n\(cluster.socketDirectory)\n"
        try lock.write(toFile: cluster.dataDirectory + "/postmaster.pid", atomically: false, encoding: .utf8)
        try cluster.start()
        #expect(try cluster.runSQL("select 1") == "1")
        try cluster.stop()
        #expect(!cluster.isRunning)
    }

    @Test func refusesToStartOnAnotherPortWhileRunning() throws {
        let cluster = try makeCluster()
        defer { try? cluster.remove() }
        try cluster.initializeIfNeeded()
        try cluster.start()
        var otherPort = Cluster.freePort()
        while otherPort == cluster.port { otherPort = Cluster.freePort() }
        let other = try Cluster(directory: cluster.directory, port: otherPort, options: cluster.options)
        let error = #expect(throws: ClusterError.self) { try other.start() }
        #expect(error?.code == .portConflict)
        try cluster.stop()
    }

    @Test func aFailedStartNamesTheLogAndQuotesIt() throws {
        let directory = "/tmp/localcluster-test-\(UUID().uuidString.prefix(8).lowercased())"
        let options = Cluster.Options(durable: false, maxConnections: -5, timeout: .seconds(20))
        let cluster = try Cluster(directory: directory, port: Cluster.freePort(), options: options)
        defer { try? cluster.remove() }
        try cluster.initializeIfNeeded()
        let error = #expect(throws: ClusterError.self) { try cluster.start() }
        #expect(error?.code == .commandFailed)
        #expect(error?.logFile == cluster.logFile)
        #expect(error?.logTail?.contains("max_connections") == true)
        #expect(error?.description.contains("pg_ctl") == true)
    }
}
