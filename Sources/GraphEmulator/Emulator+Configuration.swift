import GraphVersions

extension Emulator {
    /// Settings of an ``Emulator``. Every field has a documented default.
    public struct Configuration: Sendable {
        /// The version unversioned calls use (an app's "Upgrade API Version" setting on Facebook). Default
        /// `GraphVersionTable.defaultVersion`.
        public var defaultVersion: String = GraphVersionTable.defaultVersion.description
        /// The versions Facebook has and their days, as Meta's table gives them. On the emulator's clock, a version
        /// is served as itself from its release through its last day; a call to a retired one (or one older than
        /// the table) is served by the oldest version still served that day, which the `facebook-api-version`
        /// header names; a call to an unreleased version, one newer than the table or one Graph never had gets
        /// `Unknown path components`. Default `GraphVersionTable.meta`.
        public var versions: GraphVersionTable = .meta
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
