import FBSessionsCore
import FBSessionsStorage
import Foundation

/// `fbsessiond reencrypt`: moves every sealed value to the current key, with progress, resumable.
enum ReencryptCommand {
    static func run(_ arguments: Arguments) async throws {
        if arguments.flag("help") { return print(Help.reencrypt) }
        let batch = Int(arguments.value("batch") ?? "500") ?? 0
        guard (1...10_000).contains(batch) else { throw UsageError("--batch must be 1 to 10000") }
        let runtime = try Runtime(settings: try Runtime.adminSettings(), applicationName: "fbsessiond-reencrypt")
        defer { runtime.shutdown() }
        let reencryptor = Reencryptor(database: runtime.database, keyring: try runtime.keyring())
        let total = try await reencryptor.remaining().reduce(0) { $0 + $1.count }
        print("\(total) sealed value(s) to move to key \(try runtime.keyring().currentKeyID)")
        var moved = 0
        while true {
            let done = try await reencryptor.step(limit: batch)
            if done == 0 { break }
            moved += done
            print("re-sealed \(moved) of \(total)")
        }
        // Rows that in-flight transactions held were skipped: go back for them for a while before giving up.
        var left = try await reencryptor.remaining()
        var retries = 0
        while left.contains(where: { $0.count > 0 }) && retries < 150 {
            try await Task.sleep(nanoseconds: 200_000_000)
            moved += try await reencryptor.step(limit: batch)
            left = try await reencryptor.remaining()
            retries += 1
        }
        print(left.map { "\($0.table): \($0.count) left" }.joined(separator: ", "))
        let stuck = left.reduce(0) { $0 + $1.count }
        // The key's id, never the key; what moved and what is left.
        try await AuditTrail.record(
            runtime.audit, .keysReencrypted, appID: nil,
            target: [
                "kind": .string("keyring"), "key_id": .string(try runtime.keyring().currentKeyID), "moved": .int(moved),
                "left": .int(stuck),
            ])
        if stuck > 0 {
            throw CommandFailure("\(stuck) sealed value(s) still under an older key; do not remove it; run reencrypt again")
        }
    }
}
