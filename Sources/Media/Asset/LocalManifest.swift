import Foundation
import JobctlCore

#if canImport(FoundationXML)
import FoundationXML
#endif

/// Local HLS playlists and DASH manifests, checked before FFmpeg reads them (docs/security.md).
///
/// What an HLS playlist names is confined while it is read, by `InputGuard`. FFmpeg's DASH
/// reader opens what a manifest names without asking it, so a DASH manifest is checked here
/// instead, and read from the checked bytes (`MemoryInput`): every name in it (base URLs,
/// segment templates and lists) must be a relative path without `..`, a scheme or
/// percent-encoding; representation ids plain names and bandwidths numbers (templates put
/// them into paths); no link in its directory may lead out; it must be static (a live
/// manifest is read again from the file, unchecked), without
/// external links (`xlink`) or a document type, and without segments given as byte ranges
/// (`SegmentURL@mediaRange`: FFmpeg 5.1's reader misreads them and loops for ever). FFmpeg only
/// reads files with it (protocol whitelist `file`). One with several periods is read, with a
/// warning: FFmpeg reads one of them.
enum LocalManifest {
    static let maximumBytes = 4 << 20

    /// `"hls"` or `"dash"` when `data` (a file's first bytes) is a manifest's, as FFmpeg
    /// probes them.
    static func kind(ofHead data: Data) -> String? {
        var bytes = data
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        let text = String(decoding: bytes, as: UTF8.self)
        if text.hasPrefix("#EXTM3U") { return "hls" }
        if text.lowercased().contains("<mpd") { return "dash" }
        return nil
    }

    /// The manifest at `path`, if it is one: its kind, and for DASH its checked bytes and what
    /// an export of it should warn about. `input_unsupported` for one over 4 MB or a DASH
    /// manifest that fails the check.
    static func read(_ path: String) throws(MediaError) -> (kind: String, checked: Data?, warnings: [String])? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let kind = kind(ofHead: handle.readData(ofLength: 4096)) else { return nil }
        let name = (path as NSString).lastPathComponent
        let what = kind == "hls" ? "an HLS playlist (hls)" : "a DASH manifest (dash)"
        try? handle.seek(toOffset: 0)
        let data = handle.readData(ofLength: maximumBytes + 1)
        guard data.count <= maximumBytes else {
            throw MediaError(
                .inputUnsupported,
                "\(name) is \(what) larger than \(maximumBytes >> 20) MB, which jobctl does not read"
            )
        }
        guard kind == "dash" else { return (kind, nil, []) }
        func refuse(_ why: String) -> MediaError {
            MediaError(.inputUnsupported, "\(name) is \(what) that jobctl does not read: \(why)")
        }
        if data.range(of: Data("<!DOCTYPE".utf8)) != nil || data.range(of: Data("<!ENTITY".utf8)) != nil {
            throw refuse("it declares a document type or entities")
        }
        let names = MPDNames()
        let parser = XMLParser(data: data)
        parser.shouldResolveExternalEntities = false
        parser.delegate = names
        guard parser.parse() else { throw refuse("it is not well-formed XML") }
        // FFmpeg's reader matches element names without case or namespace, and attributes
        // without namespace: so does this check, on every spelling it could read.
        if names.types.contains(where: { $0.lowercased() != "static" }) {
            throw refuse("it is a live (dynamic) manifest; export from a finished, static one")
        }
        if let ranged = names.rangedFiles.first {
            throw refuse(
                "its segments are byte ranges of one file (SegmentURL mediaRange), which FFmpeg's DASH reader misreads and never finishes; export '\(ranged.prefix(80))' itself"
            )
        }
        if let link = names.xlinks.first { throw refuse("it links to other documents ('\(link.prefix(80))')") }
        for id in names.representationIDs where !isPlainName(id) {
            throw refuse("a representation id ('\(id.prefix(40))') is not a plain name")
        }
        for bandwidth in names.bandwidths
        where bandwidth.isEmpty || !bandwidth.utf8.allSatisfy({ (48...57).contains($0) }) {
            throw refuse("a bandwidth ('\(bandwidth.prefix(40))') is not a number")
        }
        for base in names.baseURLs {
            var trimmed = base.trimmingCharacters(in: .whitespacesAndNewlines)
            if trimmed.hasSuffix("/") { trimmed.removeLast() }
            if trimmed.isEmpty || trimmed == "." { continue }
            if let why = problem(trimmed) { throw refuse("it names '\(trimmed.prefix(80))', \(why)") }
        }
        for template in names.templates {
            let name = template.replacingOccurrences(
                of: #"\$[A-Za-z]+(%0[0-9]+[a-zA-Z])?\$|\$\$"#,
                with: "x",
                options: .regularExpression
            )
            if let why = problem(name) { throw refuse("it names '\(template.prefix(80))', \(why)") }
        }
        if let link = linkLeadingOut(from: PathText.parent(of: path)) {
            throw refuse("its directory holds '\(link)', a link leading outside it")
        }
        let notes =
            names.periods > 1
            ? [
                "\(name) has \(names.periods) periods; FFmpeg's DASH reader reads one (the longest, or the last when they do not say how long they are): the output holds that period only"
            ] : []
        return (kind, data, notes)
    }

    /// Why `name` is not a plain relative path inside the manifest's directory, if it is not.
    static func problem(_ name: String) -> String? {
        if name.contains(":") { return "a URL: a local DASH manifest may name only files in its own directory" }
        if name.hasPrefix("/") {
            return "an absolute path: a local DASH manifest may name only files in its own directory"
        }
        if name.contains(where: { "%?#\\".contains($0) || $0.isNewline || $0 == "\0" }) {
            return "with characters a file name here may not have"
        }
        if TenantPath.hasEmptyOrDotSegment(name, allowingDot: true) {
            return "with an empty or '..' segment: a local DASH manifest may name only files in its own directory"
        }
        return nil
    }

    private static func isPlainName(_ text: String) -> Bool {
        !text.isEmpty && text != "." && text != ".."
            && !text.contains(where: { "/\\:%?#$".contains($0) || $0.isNewline || $0 == "\0" })
    }

    /// The first symbolic link under `directory` that resolves outside it (at most 100,000
    /// entries are looked at; more is refused as one).
    static func linkLeadingOut(from directory: String) -> String? {
        let root = OutputDestination.resolved(directory)
        guard let walker = FileManager.default.enumerator(atPath: directory) else { return nil }
        var count = 0
        while let name = walker.nextObject() as? String {
            count += 1
            if count > 100_000 { return "(more than 100,000 files)" }
            let path = (directory as NSString).appendingPathComponent(name)
            var info = stat()
            guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFLNK else { continue }
            if !OutputDestination.resolved(path).hasPrefix(root + "/") { return name }
        }
        return nil
    }

    /// Every name an MPD uses for files, and what else FFmpeg's reader acts on: element names
    /// without case or namespace prefix, attributes by their local name (as libxml2's
    /// `xmlGetProp` finds them), on any element.
    private final class MPDNames: NSObject, XMLParserDelegate {
        var baseURLs: [String] = []
        var templates: [String] = []
        var representationIDs: [String] = []
        var bandwidths: [String] = []
        var xlinks: [String] = []
        var types: [String] = []
        var periods = 0
        /// The base URLs of representations whose segments are byte ranges.
        var rangedFiles: [String] = []
        private var ranged = false
        private var text: String?

        static func local(_ name: String) -> String {
            (name.split(separator: ":").last.map(String.init) ?? name).lowercased()
        }

        func parser(
            _ parser: XMLParser,
            didStartElement element: String,
            namespaceURI: String?,
            qualifiedName: String?,
            attributes: [String: String] = [:]
        ) {
            let name = Self.local(element)
            for (key, value) in attributes {
                switch Self.local(key) {
                case let attribute where attribute.hasSuffix("href"): xlinks.append(value)
                case "media", "initialization", "index", "bitstreamswitching", "sourceurl": templates.append(value)
                case "bandwidth": bandwidths.append(value)
                case "mediarange" where name == "segmenturl": ranged = true
                case "id" where name == "representation": representationIDs.append(value)
                case "type" where name == "mpd": types.append(value)
                default: break
                }
            }
            switch name {
            case "period": periods += 1
            case "baseurl": text = ""
            default: break
            }
        }

        func parser(_ parser: XMLParser, foundCDATA block: Data) { text? += String(decoding: block, as: UTF8.self) }

        func parser(_ parser: XMLParser, foundCharacters string: String) { text? += string }

        func parser(_ parser: XMLParser, didEndElement element: String, namespaceURI: String?, qualifiedName: String?) {
            if Self.local(element) == "baseurl", let text {
                baseURLs.append(text)
                self.text = nil
            }
            if ranged, ["representation", "adaptationset", "period", "mpd"].contains(Self.local(element)) {
                rangedFiles.append(
                    baseURLs.last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "the file it names"
                )
                ranged = false
            }
        }
    }
}
