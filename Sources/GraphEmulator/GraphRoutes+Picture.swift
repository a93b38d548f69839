/// `GET /{id}/picture` (docs/facebook-graph.md §5, §12.10) and the CDN links it hands out.
extension GraphRoutes {
    static func picture(_ request: GraphRequest, store: inout EmulatorStore) -> GraphAnswer {
        let node = request.segments[0]
        guard request.method == "GET" else { return GraphAnswer(.error(.unsupported(request.method, id: node))) }
        let caller: Caller
        switch Self.caller(request, store: store, needsData: false) {
        case .failure(let error): return GraphAnswer(.error(error))
        case .success(let found): caller = found
        }
        // An app-scoped id needs no token; `me` needs a user token.
        var userID = node
        if node == "me" {
            guard case .user(let record) = caller, let id = record.userID else {
                return GraphAnswer(.error(.activeTokenRequired))
            }
            userID = id
        }
        guard let user = store.users[userID] else { return GraphAnswer(.error(.unsupported("GET", id: node))) }
        let size: PictureSize
        switch PictureSize.resolve(
            type: request.parameter("type"), width: request.parameter("width"), height: request.parameter("height"),
            limit: store.configuration.maxPictureSize)
        {
        case .failure(let error): return GraphAnswer(.error(error))
        case .success(let resolved): size = resolved
        }
        let data = pictureData(user: user, size: size, request: request, store: &store)
        let redirect = (request.parameter("redirect") ?? "true").lowercased()
        if ["false", "0"].contains(redirect) {
            return GraphAnswer(.json(.object([("data", data)])))
        }
        return GraphAnswer(.redirect(data["url"]?.stringValue ?? ""))
    }

    /// `{"height","is_silhouette","url","width"}` for `user` at `size`, with a CDN URL valid until `ext`.
    static func pictureData(
        user: EmulatedUser, size: PictureSize, request: GraphRequest, store: inout EmulatorStore
    ) -> JSONValue {
        let silhouette = !user.hasPicture
        let url = PictureCDN.url(
            base: request.baseURL, userID: silhouette ? nil : user.id, size: size,
            expiry: store.now + store.configuration.pictureURLLifetime, key: store.cdnKey)
        return .object([
            ("height", .int(Int64(size.height))), ("is_silhouette", .bool(silhouette)), ("url", .string(url)),
            ("width", .int(Int64(size.width))),
        ])
    }
}
