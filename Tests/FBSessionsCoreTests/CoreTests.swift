import Crypto
import FBSessionsCore
import Foundation
import Testing
import TestSupport

@Suite struct KeyringTests {
    static let keyA = Data(repeating: 1, count: 32).base64EncodedString()
    static let keyB = Data(repeating: 2, count: 32).base64EncodedString()

    @Test func sealsWithTheFirstKeyAndBindsTheContext() throws {
        let ring = try Keyring(parsing: "a:\(Self.keyA),b:\(Self.keyB)")
        let sealed = try ring.seal(Array("app secret".utf8), context: "app_1")
        #expect(sealed.keyID == "a")
        #expect(String(decoding: try ring.open(sealed, context: "app_1"), as: UTF8.self) == "app secret")
        #expect(throws: KeyringError.self) { try ring.open(sealed, context: "app_2") }
        var tampered = sealed.box
        tampered[tampered.count - 1] ^= 1
        #expect(throws: KeyringError.self) { try ring.open(Keyring.Sealed(keyID: "a", box: tampered), context: "app_1") }
    }

    @Test func rotationKeepsOldCiphertextsReadable() throws {
        let old = try Keyring(parsing: "a:\(Self.keyA)")
        let sealed = try old.seal(Array("s".utf8), context: "row")
        let rotated = try Keyring(parsing: "b:\(Self.keyB),a:\(Self.keyA)")
        #expect(try rotated.open(sealed, context: "row") == Array("s".utf8))
        #expect(try rotated.seal(Array("s".utf8), context: "row").keyID == "b")
        let withoutOld = try Keyring(parsing: "b:\(Self.keyB)")
        #expect(throws: KeyringError.self) { try withoutOld.open(sealed, context: "row") }
    }

    @Test func rejectsBadRingsWithoutShowingKeys() {
        for text in ["", "nokey", "a:short", "a:\(Self.keyA),a:\(Self.keyB)", "bad id:\(Self.keyA)"] {
            do {
                _ = try Keyring(parsing: text)
                Issue.record("accepted \(text)")
            } catch {
                #expect(!error.description.contains(Self.keyA))
            }
        }
    }
}

@Suite struct APIKeyTextTests {
    @Test func generatedKeysParseAndMatchTheirHashOnly() {
        let made = APIKeyText.generate()
        #expect(made.key.hasPrefix("fbs_\(made.id)_"))
        #expect(APIKeyText.id(in: made.key) == made.id)
        #expect(APIKeyText.matches(made.key, hash: made.hash))
        #expect(!APIKeyText.matches(made.key + "x", hash: made.hash))
        #expect(made.hash == SHA256.hash(made.key))
        #expect(APIKeyText.id(in: "fbs_short_x") == nil)
        #expect(APIKeyText.id(in: "Bearer something") == nil)
        #expect(APIKeyText.generate().key != made.key)
    }
}

@Suite struct SettingsTests {
    @Test func defaultsFollowTheContract() throws {
        let settings = try Settings.parse([:]).get()
        #expect(settings.listenHost == "127.0.0.1" && settings.listenPort == 8080)
        #expect(settings.graphURL == "https://graph.facebook.com")
        #expect(settings.validateTTL == 300 && settings.refreshAfter == 86_400 && settings.maxSlots == 8)
        #expect(settings.pictureHosts == ["fbcdn.net", "fbsbx.com", "facebook.com"])
        #expect(settings.pictureMaxBytes == 5_242_880 && settings.graphTimeout == 10)
        #expect(settings.publicURL == "http://127.0.0.1:8080")
        #expect(settings.maxBodyBytes == 1 << 20)
        #expect(settings.databaseURL == nil && settings.keyring == nil)
    }

    @Test func reportsEveryInvalidSettingAtOnce() {
        let result = Settings.parse([
            "FBS_LISTEN": "nowhere", "FBS_VALIDATE_TTL": "soon", "FBS_LOG_LEVEL": "loud",
            "FBS_ENCRYPTION_KEYS": "k1:tooshort", "FBS_GRAPH_VERSION": "21", "FBS_PICTURE_ALLOW_HTTP": "perhaps",
        ])
        guard case .failure(let error) = result else {
            Issue.record("accepted invalid settings")
            return
        }
        let names = error.problems.map { String($0.prefix { $0 != ":" }) }
        #expect(
            Set(names) == [
                "FBS_LISTEN", "FBS_VALIDATE_TTL", "FBS_LOG_LEVEL", "FBS_ENCRYPTION_KEYS", "FBS_GRAPH_VERSION",
                "FBS_PICTURE_ALLOW_HTTP",
            ])
    }

    @Test func everyDocumentedVariableIsRead() {
        // Each documented variable with a bad value must be reported, so none is documented but ignored.
        for entry in Settings.documented where !["DATABASE_URL", "FBS_PUBLIC_URL", "FBS_GRAPH_URL", "FBS_DIALOG_URL", "FBS_PICTURE_HOSTS"].contains(entry.name) {
            guard case .failure(let error) = Settings.parse([entry.name: "\u{1}bad"]) else {
                Issue.record("\(entry.name) accepted a bad value")
                continue
            }
            #expect(error.problems.first?.hasPrefix(entry.name) == true)
        }
    }
}

@Suite struct AppValidationTests {
    @Test func namesIDsAndRedirectURIsAreChecked() {
        #expect(App.validate(name: "shop", facebookAppID: "1234", redirectURIs: ["https://a.example/cb"]).isEmpty)
        #expect(App.validate(name: "", facebookAppID: "12a", redirectURIs: ["ftp://x", "https://a/#frag"]).count == 4)
    }
}

@Suite struct CachedKeyStoreTests {
    @Test func remembersAppAndScopesButNeverLiveness() async throws {
        let base = InMemoryKeyStore()
        let made = try await base.addKey(appID: "app_test", scopes: [.sessions])
        let cached = CachedKeyStore(base, ttl: 60)
        // The first lookup is the full check; later ones come from the cache and say they still need confirming.
        #expect(try await cached.lookup(made.text)?.isConfirmed == true)
        let hit = try #require(try await cached.lookup(made.text))
        #expect(!hit.isConfirmed && hit.principal.key.id == made.key.id)
        #expect(try await cached.isLive(keyID: made.key.id))
        _ = try await base.revokeKey(id: made.key.id)  // revoked elsewhere (another instance, the CLI)
        #expect(try await !cached.isLive(keyID: made.key.id))  // the confirmation sees it at once...
        #expect(try await cached.lookup(made.text) == nil)  // ...and the dead entry is gone
        // Wrong keys are never cached; authenticate always asks the store.
        base.available = false
        await #expect(throws: ServiceError.databaseUnavailable) { _ = try await cached.lookup(made.text + "x") }
        await #expect(throws: ServiceError.databaseUnavailable) { _ = try await cached.authenticate(made.text) }
        base.available = true
        // A TTL of 0 caches nothing.
        let other = try await base.addKey(appID: "app_test", scopes: [.sessions])
        let uncached = CachedKeyStore(base, ttl: 0)
        #expect(try await uncached.lookup(other.text)?.isConfirmed == true)
        #expect(try await uncached.lookup(other.text)?.isConfirmed == true)
    }

    /// A thread remembers the last key it found (``CachedKeyStore/cachedPrincipal(_:)``): the checks below run with no
    /// suspension between them, so each second call of a pair is answered from that memo on the same thread.
    @Test func theThreadsLastKeyIsRememberedOnlyWhileItsEntryIs() async throws {
        let base = InMemoryKeyStore()
        let first = try await base.addKey(appID: "app_test", scopes: [.sessions])
        let second = try await base.addKey(appID: "app_test", scopes: [.events])
        let cached = CachedKeyStore(base, ttl: 60)
        _ = try await cached.authenticate(first.text)
        _ = try await cached.authenticate(second.text)
        let other = CachedKeyStore(InMemoryKeyStore(), ttl: 60)

        func onOneThread() -> [String?] {
            var seen: [String?] = []
            seen.append(cached.cachedPrincipal(first.text)?.key.id)
            seen.append(cached.cachedPrincipal(first.text)?.key.id)  // the memo
            seen.append(cached.cachedPrincipal(second.text)?.key.id)  // another key: its own entry
            seen.append(cached.cachedPrincipal(second.text + "x")?.key.id)  // one byte longer
            seen.append(cached.cachedPrincipal(String(second.text.dropLast()))?.key.id)  // one byte shorter
            seen.append(other.cachedPrincipal(second.text)?.key.id)  // another store, same thread, same text
            seen.append(cached.cachedPrincipal(second.text)?.key.id)
            cached.forget(keyID: second.key.id)  // a revocation: the entry and every memo of this store go
            seen.append(cached.cachedPrincipal(second.text)?.key.id)
            seen.append(cached.cachedPrincipal(first.text)?.key.id)  // a change elsewhere: found by a search
            return seen
        }
        #expect(
            onOneThread() == [
                first.key.id, first.key.id, second.key.id, nil, nil, nil, second.key.id, nil, first.key.id,
            ])

        // The entry's time bounds the memo too.
        let brief = CachedKeyStore(base, ttl: 0.05)
        _ = try await brief.authenticate(first.text)
        func twice() -> [String?] { [brief.cachedPrincipal(first.text)?.key.id, brief.cachedPrincipal(first.text)?.key.id] }
        #expect(twice() == [first.key.id, first.key.id])
        try await Task.sleep(for: .milliseconds(120))
        #expect(twice() == [nil, nil], "expired: neither the entry nor the memo answers")
    }
}
