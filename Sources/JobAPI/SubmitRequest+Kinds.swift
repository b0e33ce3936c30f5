import Foundation
import Media
import Queue
import Submission

/// The kind-specific parts of `POST /v1/jobs`: a preset by name or inline, and the options of
/// thumbnails, storyboard and waveform jobs, named as `jobctl submit`'s flags are.
extension SubmitRequest {
    /// `"preset": "low"`, or `"preset": {…}` with the fields of `jobctl presets --json`.
    enum PresetValue: Decodable, Sendable, Hashable {
        case name(String)
        case inline(JSONValue)

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let name = try? container.decode(String.self) {
                self = .name(name)
                return
            }
            let value = try container.decode(JSONValue.self)
            guard case .object = value else {
                throw DecodingError.typeMismatch(
                    JSONValue.self,
                    .init(codingPath: decoder.codingPath, debugDescription: "a preset name or object")
                )
            }
            self = .inline(value)
        }
    }

    /// `"at": "1s,50%,end"` or `["1s", "50%", "end"]`.
    enum TimesValue: Decodable, Sendable, Hashable {
        case list([String])

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let text = try? container.decode(String.self) {
                self = .list([text])
            } else {
                self = .list(try container.decode([String].self))
            }
        }

        var text: String {
            switch self {
            case .list(let items): items.joined(separator: ",")
            }
        }
    }

    /// `jobctl submit --kind thumbnails` in JSON.
    struct ThumbnailsBody: Decodable, Sendable, Hashable {
        var at: TimesValue?
        var every: String?
        var count: WholeNumber?
        var exact: Bool?
        var tolerance: String?
        var size: String?
    }

    /// `jobctl submit --kind storyboard` in JSON.
    struct StoryboardBody: Decodable, Sendable, Hashable {
        var tiles: WholeNumber?
        var tileSize: String?
        var columns: WholeNumber?
    }

    /// `jobctl submit --kind waveform` in JSON.
    struct WaveformBody: Decodable, Sendable, Hashable {
        var samplesPerPixel: WholeNumber?
        var pixelsPerSecond: WholeNumber?
        var bits: WholeNumber?
        var splitChannels: Bool?
        var track: WholeNumber?
        /// `["json", "png"]` or `"json,png"`; default json.
        var files: TimesValue?
        var width: WholeNumber?
        var height: WholeNumber?
        var color: String?
        var background: String?
    }

    /// What to make, from the request's kind and its kind's fields.
    func recipe(_ kind: JobKind, catalog: PresetCatalog) throws(APIError) -> JobRecipe {
        for (field, given, owner) in [
            ("preset", preset != nil, JobKind.export), ("thumbnails", thumbnails != nil, .thumbnails),
            ("storyboard", storyboard != nil, .storyboard), ("waveform", waveform != nil, .waveform),
        ] where given && owner != kind {
            throw .invalid(field, "\(field) is for kind \(owner.rawValue), not \(kind.rawValue)")
        }
        switch kind {
        case .export, .noop:
            return .export(try exportPreset(catalog), container: try container())
        case .thumbnails:
            return .thumbnails(try thumbnailOptions(thumbnails ?? ThumbnailsBody()))
        case .storyboard:
            let body = storyboard ?? StoryboardBody()
            var options = StoryboardOptions()
            options.tiles = body.tiles?.value
            options.columns = body.columns?.value
            if let text = body.tileSize {
                guard let size = PictureSize(maximum: text) else {
                    throw .invalid("storyboard.tileSize", "storyboard.tileSize is WxH, Wx or xH, e.g. 160x")
                }
                options.tileSize = size
            }
            options.format = try imageFormat()
            return .storyboard(options)
        case .waveform:
            return .waveform(try waveformOptions(waveform ?? WaveformBody()))
        }
    }

    private func exportPreset(_ catalog: PresetCatalog) throws(APIError) -> Preset {
        do {
            switch preset {
            case nil:
                throw APIError.invalid("preset", "preset is required (GET the names with `jobctl presets`)")
            case .name(let name):
                return try catalog.preset(named: name)
            case .inline(let value):
                let data: Data
                do { data = try JSONEncoder().encode(value) } catch { throw APIError.invalid("preset", "\(error)") }
                return try catalog.inlinePreset(data)
            }
        } catch let error as MediaError {
            throw APIError.invalid("preset", error.message, code: error.code.errorCode)
        } catch let error as APIError {
            throw error
        } catch {
            throw APIError.invalid("preset", "\(error)")
        }
    }

    private func container() throws(APIError) -> ContainerFormat? {
        guard let format else { return nil }
        guard let container = ContainerFormat(rawValue: format) else {
            throw .invalid("format", "format for an export is mp4, mov or m4a, not '\(format.prefix(20))'")
        }
        return container
    }

    private func imageFormat() throws(APIError) -> ImageFormat {
        guard let format else { return .jpeg }
        guard let image = ImageFormat(name: format) else {
            throw .invalid("format", "format for images is jpg, png or webp, not '\(format.prefix(20))'")
        }
        return image
    }

    private func thumbnailOptions(_ body: ThumbnailsBody) throws(APIError) -> ThumbnailOptions {
        func duration(_ text: String?, _ field: String) throws(APIError) -> Int64? {
            guard let text else { return nil }
            do {
                return try TimeRange.parseTime(Substring(text), in: text)
            } catch {
                throw .invalid("thumbnails.\(field)", "thumbnails.\(field): \(error.reading(.duration).description)")
            }
        }
        var options = ThumbnailOptions()
        if let at = body.at {
            do {
                options.times = try ImageTime.parseList(at.text)
            } catch {
                throw .invalid("thumbnails.at", "thumbnails.at: \(error.description)")
            }
        }
        options.every = try duration(body.every, "every")
        options.count = body.count?.value
        if body.exact == true {
            guard body.tolerance == nil else {
                throw .invalid("thumbnails.tolerance", "thumbnails.exact and thumbnails.tolerance are alternatives")
            }
            options.toleranceBefore = 0
            options.toleranceAfter = 0
        } else if let tolerance = try duration(body.tolerance, "tolerance") {
            options.toleranceBefore = tolerance
            options.toleranceAfter = tolerance
        }
        if let text = body.size {
            guard let size = PictureSize(maximum: text) else {
                throw .invalid("thumbnails.size", "thumbnails.size is WxH, Wx or xH, e.g. 320x")
            }
            options.maximumSize = size
        }
        options.format = try imageFormat()
        return options
    }

    private func waveformOptions(_ body: WaveformBody) throws(APIError) -> WaveformOptions {
        guard format == nil else {
            throw .invalid("format", "a waveform has no format: choose its files with waveform.files")
        }
        var options = WaveformOptions()
        options.samplesPerPixel = body.samplesPerPixel?.value
        options.pixelsPerSecond = body.pixelsPerSecond?.value
        options.bits = body.bits?.value ?? 16
        options.splitChannels = body.splitChannels ?? false
        options.track = body.track?.value
        let files = (body.files?.text ?? "json").split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces).lowercased()
        }
        for name in files where !["json", "dat", "png"].contains(name) {
            throw .invalid("waveform.files", "waveform.files lists json, dat and png, not '\(name.prefix(20))'")
        }
        options.json = files.contains("json")
        options.dat = files.contains("dat")
        let drawn = body.width != nil || body.height != nil || body.color != nil || body.background != nil
        if files.contains("png") {
            var picture = WaveformPicture()
            if let width = body.width { picture.width = width.value }
            if let height = body.height { picture.height = height.value }
            if let color = body.color { picture.color = color.hasPrefix("#") ? String(color.dropFirst()) : color }
            if let background = body.background {
                picture.background = background.hasPrefix("#") ? String(background.dropFirst()) : background
            }
            options.png = picture
        } else if drawn {
            throw .invalid(
                "waveform.files",
                "width, height, color and background are for the PNG: add png to waveform.files"
            )
        }
        return options
    }
}
