import FBSessionsCore
import Foundation
import Support
import Testing

@testable import FBSessionsAPI

/// The hand-written session and list bodies (``JSONWriter``) are byte-for-byte what `JSONEncoder` with sorted keys
/// and unescaped slashes makes of the contract's values (docs/api-contract.md, "Session JSON"), built here from the
/// session (the profile's from ``Profile/Field``), for every shape: open, token loaded, closed, with and without a
/// profile, revocation, empty and filled permission lists, and strings that need escaping.
@Suite struct SessionJSONTests {
    private static func encoded(_ value: some Encodable) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(value))
    }

    /// A JSON value, for the bodies the contract describes.
    private enum Expected: Encodable {
        case null, bool(Bool), int(Int), string(String), strings([String]), array([Expected])
        case object([String: Expected])

        static func text(_ value: String?) -> Expected { value.map(Expected.string) ?? .null }
        static func time(_ value: Date?) -> Expected { text(value.map(RFC3339.string)) }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .null: try container.encodeNil()
            case .bool(let value): try container.encode(value)
            case .int(let value): try container.encode(value)
            case .string(let value): try container.encode(value)
            case .strings(let value): try container.encode(value)
            case .array(let value): try container.encode(value)
            case .object(let value): try container.encode(value)
            }
        }
    }

    /// The session body the contract describes.
    private static func expected(_ dto: SessionDTO) -> Expected {
        let session = dto.session
        var profile = Expected.null
        if let fields = session.profile {
            var object = Dictionary(uniqueKeysWithValues: Profile.Field.allCases.map { ($0.rawValue, Expected.text(fields[$0])) })
            object["refreshed_at"] = .time(session.profileRefreshedAt)
            profile = .object(object)
        }
        let token: Expected =
            session.state == .closed
            ? .null
            : .object([
                "expires_at": .time(session.tokenExpiresAt), "data_access_expires_at": .time(session.dataAccessExpiresAt),
                "refreshed_at": .time(session.tokenRefreshedAt), "permissions": .strings(session.permissions),
                "declined_permissions": .strings(session.declinedPermissions),
                "expired_permissions": .strings(session.expiredPermissions),
                "granular_scopes": .array(
                    session.granularScopes.map { granted in
                        var entry: [String: Expected] = ["scope": .string(granted.scope)]
                        if let targets = granted.targetIDs { entry["target_ids"] = .strings(targets) }
                        return .object(entry)
                    }),
            ])
        var object: [String: Expected] = [
            "id": .string(session.id), "login_kind": .string(session.loginKind.rawValue), "owner": .string(session.owner),
            "slot": .int(session.slot), "active": .bool(session.active), "state": .string(session.state.rawValue),
            "closed_reason": .text(session.closedReason?.rawValue), "action_required": .text(session.actionRequired?.rawValue),
            "validation": .string(dto.validation.rawValue), "validated_at": .time(session.validatedAt),
            "facebook_user_id": .string(session.facebookUserID), "token": token, "profile": profile,
            "created_at": .time(session.createdAt), "updated_at": .time(session.updatedAt),
        ]
        if let revocation = dto.revocation { object["revocation"] = .string(revocation.rawValue) }
        return .object(object)
    }

    private static let awkward = [
        "", "plain", "quote \" and backslash \\ and slash /", "line\nbreak\r\ttab \u{08}\u{0C}\u{00}\u{1F}\u{7F}",
        "é ünïcödé 😀 \u{2028}\u{2029}", "https://scontent.xx.fbcdn.net/v/t1.0-1/p50x50/1.jpg?_nc_cat=1&oh=a%2Fb",
        "</script><!--", String(repeating: "x", count: 300),
    ]

    private static func session(_ seed: Int) -> Session {
        var generator = SeededGenerator(seed: UInt64(seed))
        func text() -> String { awkward[Int.random(in: 0..<awkward.count, using: &generator)] }
        func maybeText() -> String? { Bool.random(using: &generator) ? text() : nil }
        func date() -> Date { Date(timeIntervalSince1970: Double.random(in: -1e9...4e9, using: &generator)) }
        func maybeDate() -> Date? { Bool.random(using: &generator) ? date() : nil }
        func list() -> [String] { (0..<Int.random(in: 0...3, using: &generator)).map { _ in text() } }
        let state = [SessionState.open, .tokenLoaded, .closed][seed % 3]
        // Granted assets: none, permissions that apply to all (no target_ids), or ids (an empty list kept as such).
        let granularScopes = (0..<Int.random(in: 0...3, using: &generator)).map { _ in
            GranularScope(scope: text(), targetIDs: Bool.random(using: &generator) ? nil : list())
        }
        var profile: Profile?
        if seed % 4 != 0 {
            var fields = Profile(id: text())
            for field in Profile.Field.allCases where field != .id { fields[field] = maybeText() }
            profile = fields
        }
        return Session(
            id: "ses_" + text(), appID: "app_1", owner: text(), slot: Int.random(in: 0...7, using: &generator),
            facebookUserID: text(), state: state,
            closedReason: state == .closed ? ClosedReason.allCases[seed % ClosedReason.allCases.count] : nil,
            closedAt: maybeDate(), storedAction: [nil, ActionRequired.reauthorize, .rerequest][seed % 3],
            tokenExpiresAt: maybeDate(), dataAccessExpiresAt: maybeDate(), tokenRefreshedAt: maybeDate(),
            permissions: list(), declinedPermissions: list(), expiredPermissions: list(),
            granularScopes: state == .closed ? [] : granularScopes, profile: profile,
            profileRefreshedAt: maybeDate(), validatedAt: maybeDate(), createdAt: date(), updatedAt: date(),
            active: Bool.random(using: &generator))
    }

    @Test func sessionBodiesMatchTheEncoder() throws {
        let validations: [SessionService.Validation] = [.fresh, .cached, .deferred]
        let revocations: [SessionService.Revocation?] = [nil, .done, .pending]
        for seed in 0..<600 {
            let dto = SessionDTO(
                session: Self.session(seed), validation: validations[seed % 3], revocation: revocations[seed / 3 % 3])
            let expected = try Self.encoded(Self.expected(dto))
            #expect(dto.jsonBytes == expected, "seed \(seed): \(String(decoding: dto.jsonBytes, as: UTF8.self))")
        }
    }

    @Test func listBodiesMatchTheEncoder() throws {
        for count in 0...8 {
            let list = OwnerRoutes.ListDTO(
                sessions: (0..<count).map { SessionDTO(session: Self.session($0 * 7 + count), validation: .cached) },
                activeSessionID: count % 2 == 0 ? nil : "ses_active\"/\\")
            let expected = Expected.object([
                "active_session_id": .text(list.activeSessionID), "sessions": .array(list.sessions.map(Self.expected)),
            ])
            #expect(list.jsonBytes == (try Self.encoded(expected)), "count \(count)")
        }
    }

    @Test func writerEscapesAsTheEncoderDoes() throws {
        struct Box: Encodable { let v: String }
        var every = ""
        for value in 0..<0x80 { every.unicodeScalars.append(Unicode.Scalar(UInt8(value))) }
        for text in Self.awkward + [every] {
            var writer = JSONWriter()
            writer.beginObject()
            writer.key("v")
            writer.string(text)
            writer.endObject()
            #expect(writer.bytes == (try Self.encoded(Box(v: text))), "\(text.debugDescription)")
        }
    }
}

/// A small deterministic generator (SplitMix64), so a failing seed can be replayed.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}
