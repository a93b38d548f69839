/// Names OpenSSL keeps pointers to after the call that takes them.
///
/// `OSSL_PARAM_BLD_push_BN` stores its key name, and the built parameters point at it, until `EVP_PKEY_fromdata`
/// has read them; `EVP_PKEY_CTX_new_from_name` keeps its key type name in the context. A Swift `String` passed to a
/// `const char *` is a temporary that dies with the call, so these names are static strings, whose bytes live as
/// long as the program (each of these returns the same address every time).
enum StaticCString {
    /// `OSSL_PKEY_PARAM_RSA_N`.
    static var rsaModulus: UnsafePointer<CChar> { pointer(to: "n") }
    /// `OSSL_PKEY_PARAM_RSA_E`.
    static var rsaExponent: UnsafePointer<CChar> { pointer(to: "e") }
    /// The key type name of RSA keys.
    static var rsa: UnsafePointer<CChar> { pointer(to: "RSA") }

    /// A pointer to the NUL-terminated bytes of a string literal.
    private static func pointer(to text: StaticString) -> UnsafePointer<CChar> {
        precondition(text.hasPointerRepresentation, "a static C string must be a literal")
        return UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
    }
}
