import Foundation

/// Finds a file or folder the service ships beside its binary (the migrations, `openapi.yaml`, `docs.html`), in
/// one order for every such resource: the setting that names it, the current directory, the installed
/// `share/fbsessiond/`, then the folders above the executable (a source checkout, where tests and `swift run` start
/// from `.build/…`).
public enum ResourceLocator {
    /// Where `name` may be, in the order above; `setting` is the environment variable that overrides all of them.
    public static func candidates(
        _ name: String, setting: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> [URL] {
        if let configured = environment[setting], !configured.isEmpty {
            return [URL(fileURLWithPath: configured)]
        }
        var candidates = [URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(name)]
        var directory = URL(fileURLWithPath: CommandLine.arguments.first ?? ".").resolvingSymlinksInPath()
            .deletingLastPathComponent()
        candidates.append(directory.appendingPathComponent("../share/fbsessiond/\(name)").standardized)
        for _ in 0..<6 {
            candidates.append(directory.appendingPathComponent(name))
            directory = directory.deletingLastPathComponent()
        }
        return candidates
    }
}
