import Crypto
import Foundation
import Support

/// Everything the emulator knows, behind one lock. Graph routes, control routes and the Swift API all work on
/// the ``EmulatorStore`` inside ``withStore(_:)``; nothing in there blocks or does I/O (but for the one `write(2)` per
/// minted secret to the test run's ``SecretLedger``, when `FBS_SECRETS_LEDGER` is set).
///
/// Thread safety: all access goes through `withStore`, which holds the store's lock for the duration of the
/// closure.
final class EmulatorState: Sendable {
    let configuration: Emulator.Configuration
    private let store: Locked<EmulatorStore>

    init(configuration: Emulator.Configuration) {
        self.configuration = configuration
        self.store = Locked(EmulatorStore(configuration: configuration))
    }

    /// Runs `body` with exclusive access to the store.
    func withStore<T>(_ body: (inout EmulatorStore) throws -> T) rethrows -> T {
        try store.withLock(body)
    }
}

/// A pending injected fault.
struct PendingFault: Sendable {
    var fault: GraphFault
    var remaining: Int
}

/// The emulator's mutable state. Every mutating helper keeps the invariants documented on its field.
struct EmulatorStore: Sendable {
    let configuration: Emulator.Configuration
    /// Apps by id.
    var apps: [String: EmulatedApp] = [:]
    /// The suffix of the app token `client_credentials` hands out (`APP_ID|suffix`), by app id.
    var appTokenSuffixes: [String: String] = [:]
    /// Users by id, and their creation order (the dialog lists them in it).
    var users: [String: EmulatedUser] = [:]
    var userOrder: [String] = []
    /// Tokens by token string.
    var tokens: [String: TokenRecord] = [:]
    /// Facebook Login for Business configurations by id (each of one app).
    var businessConfigurations: [String: BusinessConfiguration] = [:]
    /// Authorization codes by code string.
    var codes: [String: AuthorizationCode] = [:]
    /// The permissions each user gave each app (key: app id, user id). A user is visible to an app while a grant
    /// exists; revoking all permissions removes it.
    var grants: [GrantKey: Grant] = [:]
    /// Faults to serve, per endpoint, in order.
    var faults: [GraphEndpoint: [PendingFault]] = [:]
    /// Injected latency per endpoint; `defaultLatency` applies to endpoints without their own.
    var latency: [GraphEndpoint: Duration] = [:]
    var defaultLatency: Duration = .zero
    /// Calls per endpoint since the last reset.
    var counters: [GraphEndpoint: Int] = [:]
    /// Seconds added to the host clock.
    var clockOffset: Int64 = 0
    /// `x-app-usage` levels per app, and for apps without their own.
    var usage: [String: AppUsage] = [:]
    var defaultUsage = AppUsage()
    /// Leave `error_subcode` out of error bodies.
    var omitErrorSubcode = false
    /// Answer successful DELETEs with a bare `true` instead of `{"success":true}`.
    var bareTrueOnDelete = false
    /// The base URL learned when the emulator started its own server.
    var startedBaseURL: String?
    /// The key that signs picture CDN URLs.
    let cdnKey = SecureRandom.bytes(32)
    /// Limited Login: signing keys, the key set's max-age, uninstalls.
    var limited = LimitedLoginState()
    /// Generated images, by cache key; small and bounded.
    var imageCache: [String: [UInt8]] = [:]
    var imageCacheOrder: [String] = []

    init(configuration: Emulator.Configuration) {
        self.configuration = configuration
    }

    /// The emulator's clock, Unix seconds.
    var now: Int64 {
        Int64(Date().timeIntervalSince1970) + clockOffset
    }

    /// The injected latency for `endpoint`.
    func latency(for endpoint: GraphEndpoint) -> Duration {
        latency[endpoint] ?? defaultLatency
    }

    /// Counts a call of `endpoint` and takes the next fault queued for it, if any.
    mutating func begin(_ endpoint: GraphEndpoint) -> GraphFault? {
        counters[endpoint, default: 0] += 1
        guard var queue = faults[endpoint], !queue.isEmpty else { return nil }
        let fault = queue[0].fault
        queue[0].remaining -= 1
        if queue[0].remaining <= 0 { queue.removeFirst() }
        faults[endpoint] = queue.isEmpty ? nil : queue
        return fault
    }

    /// The `x-app-usage` levels for `appID`.
    func usage(for appID: String) -> AppUsage {
        usage[appID] ?? defaultUsage
    }

    /// Stores a generated image, keeping at most 64.
    mutating func cacheImage(_ bytes: [UInt8], key: String) {
        guard imageCache[key] == nil else { return }
        imageCache[key] = bytes
        imageCacheOrder.append(key)
        if imageCacheOrder.count > 64 {
            imageCache[imageCacheOrder.removeFirst()] = nil
        }
    }
}
