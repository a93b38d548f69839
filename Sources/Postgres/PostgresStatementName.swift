/// The server-side name of a prepared statement, derived from its SQL text alone.
///
/// A name is `fbs_` followed by the 32 lowercase hex digits of the 128-bit FNV-1a hash of the SQL text's UTF-8
/// bytes: 36 bytes, well under PostgreSQL's 63-byte identifier limit. It depends on nothing but the text, so
/// every process and every version of the service gives one text the same name, and two texts get the same name
/// only if their 128-bit hashes collide (for the few hundred fixed texts of one service, a chance far below
/// 2^-100). So wherever a server session holds a statement under such a name, it holds that very SQL: behind a
/// pooler that shares server sessions between clients, a name can never run a different statement, and a
/// "prepared statement already exists" (SQLSTATE 42P05) for a name means that the text is already prepared
/// there. The statement cache also refuses to reuse a name for a second text on one connection, so even a
/// collision could only ever cost the preparation, never run the wrong statement.
///
/// FNV-1a (Fowler, Noll, Vo) is not a cryptographic hash; none is needed: the texts are fixed in the source
/// (values travel as parameters), so nobody outside can choose them.
enum PostgresStatementName {
    /// The FNV-1a 128-bit offset basis.
    private static let offsetBasis: UInt128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d
    /// The FNV-1a 128-bit prime, 2^88 + 2^8 + 0x3b.
    private static let prime: UInt128 = 0x0000_0000_0100_0000_0000_0000_0000_013b
    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// The name for `sql`.
    ///
    /// - Parameter sql: The statement's text, exactly as sent.
    /// - Returns: `fbs_` and 32 hex digits.
    static func of(_ sql: String) -> String {
        var hash = offsetBasis
        for byte in sql.utf8 {
            hash ^= UInt128(byte)
            hash = hash &* prime
        }
        var name: [UInt8] = Array("fbs_".utf8)
        name.reserveCapacity(36)
        for shift in stride(from: 124, through: 0, by: -4) {
            name.append(hexDigits[Int(truncatingIfNeeded: (hash >> UInt128(shift)) & 0xf)])
        }
        return String(decoding: name, as: UTF8.self)
    }
}
