extension Emulator {
    /// Settings of an ``Emulator``. Every field has a documented default.
    public struct Configuration: Sendable {
        /// The version unversioned calls use. Default `v21.0`.
        public var defaultVersion: String = "v21.0"
        /// The versions served, oldest first. Calls to an older (expired) version are served by the oldest of
        /// these; calls to a version Graph never had get `Unknown path components`. Default v21.0 through v26.0.
        public var supportedVersions: [String] = ["v21.0", "v22.0", "v23.0", "v24.0", "v25.0", "v26.0"]
        /// The base URL put into generated URLs (picture CDN links, dialog form targets). Default nil: the started
        /// server's address, or each request's `Host` header.
        public var publicBaseURL: String?
        /// Lifetime of short-lived user tokens (code exchange, dialog). Default 5400 s (Facebook: "an hour or two").
        public var shortLivedLifetime: Int64 = 5400
        /// Lifetime of long-lived user tokens (`fb_exchange_token`). Default 5,184,000 s (60 days).
        public var longLivedLifetime: Int64 = 5_184_000
        /// Data-access lifetime. Default 7,776,000 s (90 days).
        public var dataAccessLifetime: Int64 = 7_776_000
        /// Lifetime of authorization codes. Default 600 s.
        public var codeLifetime: Int64 = 600
        /// Lifetime of picture CDN URLs (their `ext`). Default 1,209,600 s (14 days).
        public var pictureURLLifetime: Int64 = 1_209_600
        /// Largest picture edge served, in pixels. Default 1024.
        public var maxPictureSize: Int = 1024

        /// Creates a configuration with the defaults.
        public init() {}
    }
}
