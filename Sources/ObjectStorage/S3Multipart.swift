import Crypto
import Foundation

/// How a file is cut for a multipart upload: parts of max(8 MiB, size / 10,000 rounded up to a
/// MiB) — S3 allows 10,000 parts of 5 MiB to 5 GiB — the last one shorter.
public struct MultipartPlan: Sendable, Hashable, Codable {
    public static let minimumPartSize: Int64 = 8 << 20
    public static let maximumParts: Int64 = 10_000

    public var size: Int64
    public var partSize: Int64

    public init(size: Int64, partSize: Int64? = nil) {
        self.size = size
        let needed = (size + Self.maximumParts - 1) / Self.maximumParts
        let rounded = (needed + (1 << 20) - 1) / (1 << 20) * (1 << 20)
        self.partSize = partSize ?? max(Self.minimumPartSize, rounded)
    }

    public var partCount: Int { size == 0 ? 1 : Int((size + partSize - 1) / partSize) }

    /// Part `number` (from 1): its bytes of the file.
    public func range(ofPart number: Int) -> Range<Int64> {
        let start = Int64(number - 1) * partSize
        return start..<min(size, start + partSize)
    }

    /// The ETag S3 gives the completed object: the MD5 of the parts' MD5s, then `-N`.
    public static func etag(partMD5s: [String]) -> String {
        var md5 = Insecure.MD5()
        for part in partMD5s { md5.update(data: Data(hexString: part) ?? Data()) }
        return "\(SigV4.hex(md5.finalize()))-\(partMD5s.count)"
    }
}

/// A part the store holds: its number, ETag (quotes removed) and size; and, for a part this
/// worker sent or checked, the MD5 of its bytes here.
public struct UploadedPart: Sendable, Hashable, Codable {
    public var number: Int
    public var etag: String
    public var size: Int64
    public var md5: String?

    public init(number: Int, etag: String, size: Int64, md5: String? = nil) {
        self.number = number
        self.etag = etag
        self.size = size
        self.md5 = md5
    }

    /// Whether the store's ETag is the MD5 of the bytes this worker has for the part (so the
    /// assembled object's ETag can be computed here: not under SSE-KMS or SSE-C).
    public var etagIsLocalMD5: Bool { md5.map { etag.lowercased() == $0.lowercased() } ?? false }
}

/// A multipart upload in progress.
public struct MultipartUploadInfo: Sendable, Hashable {
    public var key: String
    public var uploadID: String
}

extension S3Client {
    /// Starts a multipart upload; its upload id.
    public func createMultipartUpload(
        _ location: S3Location,
        contentType: String?,
        metadata: [String: String] = [:]
    ) throws(S3Error) -> String {
        var headers = Self.metadataHeaders(metadata)
        if let contentType { headers.append(("Content-Type", contentType)) }
        let response = try perform(
            Call(
                method: "POST",
                location: location,
                query: [("uploads", "")],
                headers: headers,
                body: .send(method: "POST", body: Data())
            )
        )
        guard let id = XMLText.first("UploadId", in: response.body), !id.isEmpty else {
            throw S3Error(.failed, "\(location): the store started a multipart upload without an UploadId")
        }
        return XMLText.unescaped(id)
    }

    /// Sends part `number` (the bytes `range` of `file`), checking the store's ETag against
    /// the part's MD5 where the store gives an MD5; the part as the store holds it.
    public func uploadPart(
        file: String,
        range: Range<Int64>,
        to location: S3Location,
        uploadID: String,
        number: Int,
        shouldAbort: (@Sendable () -> Bool)? = nil
    ) throws(S3Error) -> UploadedPart {
        let digest = try FileDigest.of(file, range: range)
        let response = try perform(
            Call(
                method: "PUT",
                location: location,
                query: [("partNumber", "\(number)"), ("uploadId", uploadID)],
                payloadHash: digest.sha256,
                body: .put(file: file, contentType: nil, range: range)
            ),
            shouldAbort: shouldAbort
        )
        // The store checked the body against its signed SHA-256; the ETag may be its MD5 (most
        // stores) or not (SSE-KMS, SSE-C): compared only where the object's ETag is computed.
        let etag = Self.unquoted(response.headers["etag"] ?? "")
        return UploadedPart(number: number, etag: etag.isEmpty ? digest.md5 : etag, size: digest.size, md5: digest.md5)
    }

    /// The parts the store holds of an upload, in order (page after page).
    public func listParts(_ location: S3Location, uploadID: String) throws(S3Error) -> [UploadedPart] {
        var parts: [UploadedPart] = []
        var marker: String?
        repeat {
            var query = [("uploadId", uploadID)]
            if let marker { query.append(("part-number-marker", marker)) }
            let response = try perform(Call(method: "GET", location: location, query: query, body: .get(range: nil)))
            for entry in XMLText.all("Part", in: response.body) {
                guard let number = Int(XMLText.first("PartNumber", in: entry) ?? "") else { continue }
                parts.append(
                    UploadedPart(
                        number: number,
                        etag: Self.unquoted(XMLText.unescaped(XMLText.first("ETag", in: entry) ?? "")),
                        size: Int64(XMLText.first("Size", in: entry) ?? "") ?? 0
                    )
                )
            }
            let next =
                XMLText.first("IsTruncated", in: response.body) == "true"
                ? XMLText.first("NextPartNumberMarker", in: response.body) : nil
            // A marker that does not move on, or more parts than S3 allows: a broken answer,
            // not a reason to loop.
            if let next,
                (Int(next) ?? 0) <= (Int(marker ?? "0") ?? 0) || Int64(parts.count) > MultipartPlan.maximumParts
            {
                throw S3Error(.transient, "\(location): the store's list of parts does not end")
            }
            marker = next
        } while marker != nil
        return parts.sorted { $0.number < $1.number }
    }

    /// Makes the object of the parts, under `condition`; its ETag.
    public func completeMultipartUpload(
        _ location: S3Location,
        uploadID: String,
        parts: [UploadedPart],
        condition: WriteCondition = .none
    ) throws(S3Error) -> String {
        let body =
            "<CompleteMultipartUpload>"
            + parts.map {
                "<Part><PartNumber>\($0.number)</PartNumber><ETag>\"\(XMLText.escaped($0.etag))\"</ETag></Part>"
            }
            .joined() + "</CompleteMultipartUpload>"
        let data = Data(body.utf8)
        let response = try perform(
            Call(
                method: "POST",
                location: location,
                query: [("uploadId", uploadID)],
                headers: condition.headers,
                payloadHash: SigV4.sha256Hex(data),
                body: .send(method: "POST", body: data, contentType: "application/xml")
            )
        )
        // An error can come with 200 once the store has started answering (S3 keeps the
        // connection alive while it assembles a large object).
        if let code = XMLText.first("Code", in: response.body), XMLText.first("Error", in: response.body) != nil {
            throw S3Error(.transient, "\(location): completing the upload failed: \(code)", storeCode: code)
        }
        return Self.unquoted(XMLText.unescaped(XMLText.first("ETag", in: response.body) ?? ""))
    }

    /// Abandons an upload and frees its parts; one already gone is no error.
    public func abortMultipartUpload(_ location: S3Location, uploadID: String) throws(S3Error) {
        do {
            _ = try perform(
                Call(method: "DELETE", location: location, query: [("uploadId", uploadID)], body: .delete)
            )
        } catch  where error.code == .notFound {
        }
    }

    /// The uploads in progress under `prefix`.
    public func listMultipartUploads(bucket: String, prefix: String) throws(S3Error) -> [MultipartUploadInfo] {
        let response = try perform(
            Call(
                method: "GET",
                location: S3Location(bucket: bucket, key: ""),
                query: [("uploads", ""), ("prefix", prefix)],
                body: .get(range: nil)
            )
        )
        return XMLText.all("Upload", in: response.body).compactMap { entry in
            guard let key = XMLText.first("Key", in: entry), let id = XMLText.first("UploadId", in: entry) else {
                return nil
            }
            return MultipartUploadInfo(key: XMLText.unescaped(key), uploadID: XMLText.unescaped(id))
        }
    }

    public static func isMD5(_ etag: String) -> Bool {
        etag.count == 32 && etag.allSatisfy(\.isHexDigit)
    }
}

extension Data {
    init?(hexString: String) {
        guard hexString.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        var index = hexString.startIndex
        while index < hexString.endIndex {
            let next = hexString.index(index, offsetBy: 2)
            guard let byte = UInt8(hexString[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        self.init(bytes)
    }
}
