import HTTPServer

/// Serves picture bytes at the CDN stand-in (`/__cdn/...`, see ``PictureCDN``).
enum CDNRoute {
    /// Checks the signed URL under the lock, then makes (or reuses) the PNG outside it.
    static func respond(to request: Request, state: EmulatorState) -> Response {
        guard request.method == "GET" || request.method == "HEAD" else { return text(405, "Method Not Allowed") }
        let segments = request.path.split(separator: "/").map(String.init)
        guard let query = FormCoding.parse(request.head.rawQuery) else { return text(400, "Bad URL") }
        let checked = state.withStore { store in
            (
                PictureCDN.target(
                    segments: segments, query: query, now: store.now, key: store.cdnKey,
                    limit: store.configuration.maxPictureSize), store.now
            )
        }
        let target: PictureCDN.Target
        switch checked.0 {
        case .failure(let failure): return text(failure.status, failure.text)
        case .success(let found): target = found
        }
        let key = "\(target.userID ?? "-")|\(target.size.width)x\(target.size.height)"
        var bytes = state.withStore { $0.imageCache[key] }
        if bytes == nil {
            let made = PNGImage.avatar(userID: target.userID, width: target.size.width, height: target.size.height)
            state.withStore { $0.cacheImage(made, key: key) }
            bytes = made
        }
        let maxAge = max(0, target.expiry - checked.1)
        return Response(
            status: 200,
            headers: [
                "Content-Type": "image/png", "Cache-Control": "max-age=\(maxAge), no-transform",
                "Access-Control-Allow-Origin": "*", "timing-allow-origin": "*",
            ],
            body: request.method == "HEAD" ? [] : bytes ?? [])
    }

    private static func text(_ status: Int, _ message: String) -> Response {
        Response(status: status, headers: ["Content-Type": "text/plain"], body: Array(message.utf8))
    }
}
