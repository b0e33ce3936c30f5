import CFFmpeg
import Synchronization

/// The file format of generated images; each is encoded by FFmpeg itself (libavcodec), so
/// images need no other library.
public enum ImageFormat: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// JPEG (`mjpeg`, full-range 4:2:0, quantizer 2: what `ffmpeg -q:v 2` writes).
    case jpeg = "jpg"
    /// PNG (`png`, 8-bit RGB): lossless.
    case png
    /// WebP (`libwebp`, lossy, quality 75).
    case webp

    public var description: String { rawValue }
    public var fileExtension: String { rawValue }

    /// Accepts `jpg`, `jpeg`, `png`, `webp`.
    public init?(name: String) {
        switch name.lowercased() {
        case "jpg", "jpeg": self = .jpeg
        case "png": self = .png
        case "webp": self = .webp
        default: return nil
        }
    }

    var encoderName: String {
        switch self {
        case .jpeg: "mjpeg"
        case .png: "png"
        case .webp: "libwebp"
        }
    }

    var pixelFormat: AVPixelFormat {
        switch self {
        case .jpeg: AV_PIX_FMT_YUVJ420P
        case .png: AV_PIX_FMT_RGB24
        case .webp: AV_PIX_FMT_YUV420P
        }
    }

    /// Whether this FFmpeg build has the encoder (libwebp is optional in FFmpeg builds).
    public var isAvailable: Bool { CodecEncoder.isAvailable(encoderName) }

    /// `encode_failed` before any work when this FFmpeg build lacks the encoder.
    func requireEncoder() throws(MediaError) {
        guard isAvailable else {
            throw MediaError(.encodeFailed, "this FFmpeg build has no \(encoderName) encoder for \(self) images")
        }
    }
}

/// Progress counted in steps (images, tiles): 0…1 once the total is known. Thread-safe.
final class StepProgress: Sendable {
    private let done = Atomic<Int>(0)
    private let total = Atomic<Int>(0)

    func start(total count: Int) { total.store(count, ordering: .relaxed) }
    func step() { done.add(1, ordering: .relaxed) }

    var fraction: Double {
        let total = total.load(ordering: .relaxed)
        return total == 0 ? 0 : Double(done.load(ordering: .relaxed)) / Double(total)
    }
}

/// Converts decoded pictures to what an image shows: the display orientation (rotation
/// applied), square pixels, a size, and the encoder's pixel format.
final class PictureConverter {
    let size: PictureSize
    private let rotation: Int
    private let format: AVPixelFormat
    private let scaler: Scaler
    private let formatter: Scaler?
    /// HDR to SDR after the scaler (`ToneMap`): an image is always SDR (`ColorPath.picture`).
    private let toneMap: ToneMapper?

    /// - Parameter size: the output size, display orientation.
    init(size: PictureSize, rotation: Int, format: AVPixelFormat, color: ColorPath = .standard) throws(MediaError) {
        self.size = size
        self.rotation = rotation
        self.format = format
        let turned = rotation % 180 != 0
        if case .toneMap(let range) = color {
            // Scale in 10 bits to the pre-rotation size, tone-map to 8-bit 4:2:0, rotate, then
            // convert to the encoder's format.
            let (width, height) = (Int32(turned ? size.height : size.width), Int32(turned ? size.width : size.height))
            scaler = Scaler(width: width, height: height, format: ToneMap.inputFormat)
            toneMap = try ToneMapper(width: width, height: height, from: range)
            formatter =
                format == AV_PIX_FMT_YUV420P
                ? nil : Scaler(width: Int32(size.width), height: Int32(size.height), format: format)
            return
        }
        toneMap = nil
        if rotation == 0 {
            scaler = Scaler(width: Int32(size.width), height: Int32(size.height), format: format)
            formatter = nil
        } else {
            // Scale to the pre-rotation size in 4:2:0 (what the rotation works on), rotate, then
            // convert to the encoder's format.
            scaler = Scaler(
                width: Int32(turned ? size.height : size.width),
                height: Int32(turned ? size.width : size.height),
                format: AV_PIX_FMT_YUV420P
            )
            formatter =
                format == AV_PIX_FMT_YUV420P
                ? nil : Scaler(width: Int32(size.width), height: Int32(size.height), format: format)
        }
    }

    func convert(_ frame: Frame) throws(MediaError) -> Frame {
        do {
            var picture = scaler.isIdentity(for: frame.pointer) ? frame : try scaler.scale(frame.pointer)
            if let toneMap {
                if picture.pointer != frame.pointer { av_frame_copy_props(picture.pointer, frame.pointer) }
                picture = try toneMap.map(picture)
            }
            if rotation != 0 { picture = try picture.rotated(clockwise: rotation) }
            if let formatter, !formatter.isIdentity(for: picture.pointer) {
                picture = try formatter.scale(picture.pointer)
            }
            picture.pointer.pointee.sample_aspect_ratio = AVRational(num: 1, den: 1)
            return picture
        } catch {
            throw MediaError(.decodeFailed, "converting a picture to \(size) failed", detail: "\(error)")
        }
    }

    /// The size of an image of a picture displayed at `display`, fitting inside `maximum`
    /// (0 on an axis: that axis is free), keeping the aspect ratio and never upscaling.
    static func imageSize(display: (width: Double, height: Double), maximum: PictureSize?) -> PictureSize {
        var scale = 1.0
        if let maximum {
            if maximum.width > 0 { scale = min(scale, Double(maximum.width) / display.width) }
            if maximum.height > 0 { scale = min(scale, Double(maximum.height) / display.height) }
        }
        return PictureSize(
            width: max(1, Int((display.width * scale).rounded())),
            height: max(1, Int((display.height * scale).rounded()))
        )
    }
}

/// Encodes one picture as an image file's bytes.
enum ImageEncoder {
    static func encode(_ picture: Frame, as format: ImageFormat) throws(MediaError) -> [UInt8] {
        do {
            let encoder = try CodecEncoder(name: format.encoderName) { context in
                context.pointee.width = picture.width
                context.pointee.height = picture.height
                context.pointee.pix_fmt = format.pixelFormat
                context.pointee.time_base = AVRational(num: 1, den: 25)
                context.pointee.sample_aspect_ratio = AVRational(num: 1, den: 1)
                if format == .jpeg {
                    context.pointee.flags |= AV_CODEC_FLAG_QSCALE
                    context.pointee.global_quality = 2 * FF_QP2LAMBDA
                    context.pointee.color_range = AVCOL_RANGE_JPEG
                }
            }
            let frame = picture.pointer
            frame.pointee.pts = 0
            frame.pointee.pict_type = AV_PICTURE_TYPE_NONE
            if format == .jpeg { frame.pointee.quality = 2 * FF_QP2LAMBDA }
            try check(encoder.send(frame), "avcodec_send_frame")
            try check(encoder.send(nil), "avcodec_send_frame(flush)")
            var bytes: [UInt8] = []
            let packet = Packet()
            while true {
                let result = encoder.receive(packet.pointer)
                if result == AVErr.eof || result == AVErr.again { break }
                try check(result, "avcodec_receive_packet")
                let data = packet.pointer.pointee
                bytes.append(contentsOf: UnsafeBufferPointer(start: data.data, count: Int(data.size)))
                av_packet_unref(packet.pointer)
            }
            guard !bytes.isEmpty else { throw FFError(code: AVErr.invalidData, operation: "the encoder wrote nothing") }
            return bytes
        } catch {
            throw MediaError(
                .encodeFailed,
                "encoding a \(picture.width)x\(picture.height) \(format) image failed",
                detail: "\(error)"
            )
        }
    }
}
