import Foundation
import Hummingbird
import JobctlCore
import Logging
import Media
import NIOCore
import Prometheus
import Queue
import SafeHTTP
import ServiceLifecycle
import Synchronization

/// The `/v1/jobs` routes. A key sees and acts on the jobs it submitted; an `admin` key on all.
package struct JobRoutes: Sendable {
    let configuration: APIConfiguration
    let watch: JobWatch
    var store: any JobDatabase { configuration.store }

    func submit(_ request: Request, context: APIRequestContext) async throws -> Response {
        let key = try Self.require(.submit, context)
        let idempotencyKey = request.headers.first { $0.name.canonicalName == "idempotency-key" }?.value
        if let idempotencyKey, idempotencyKey.isEmpty || idempotencyKey.utf8.count > 255 {
            throw APIError(
                .badRequest,
                .invalidRequest,
                "Idempotency-Key is 1 to 255 bytes",
                field: "Idempotency-Key"
            )
        }
        var request = request
        let body: ByteBuffer
        do {
            body = try await request.collectBody(upTo: context.maxUploadSize)
        } catch {
            throw APIError(
                .contentTooLarge,
                .invalidRequest,
                "the body is larger than \(context.maxUploadSize / 1024) KiB"
            )
        }
        let submitted: SubmitRequest
        do {
            submitted = try JSONDecoder().decode(SubmitRequest.self, from: Data(buffer: body))
        } catch let error as DecodingError {
            throw Self.describe(error)
        } catch {
            throw APIError(.badRequest, .invalidRequest, "the body is not JSON")
        }
        let jobRequest = try submitted.jobRequest(
            owner: key,
            idempotencyKey: idempotencyKey,
            catalog: configuration.catalog,
            scope: configuration.paths,
            policy: configuration.policy
        )
        let (job, created) = try await store.submit(jobRequest)
        if !created {
            // Stripe's rule: the same key with another request is a client bug, not a replay.
            guard Self.sameRequest(job, jobRequest) else {
                throw APIError(
                    .idempotencyKeyReused,
                    "Idempotency-Key was used for a different request (job \(job.id))",
                    field: "Idempotency-Key"
                )
            }
            return try APIResponses.json(Self.presented(job))
        }
        return try APIResponses.json(Self.presented(job), status: .created)
    }

    func show(_ request: Request, context: APIRequestContext) async throws -> Response {
        let key = try Self.require(.read, context)
        let id = try Self.jobID(context)
        guard let job = try await store.job(id), Self.visible(job, to: key) else { throw APIError.noJob(id.rawValue) }
        if let wait = try Self.waitParameter(request, maximum: configuration.maximumWait), !job.status.isTerminal {
            return try await JobWaiter(watch: watch).response(waitingFor: job, by: key, upTo: wait, context: context)
        }
        return try APIResponses.json(Self.presented(job))
    }

    func list(_ request: Request, context: APIRequestContext) async throws -> Response {
        let key = try Self.require(.read, context)
        let parameters = request.uri.queryParameters
        var query = JobQuery(owner: key.scope == .admin ? nil : key.id, limit: 25)
        // A graph's children are listed under their parent (`?parent=ID`), not among the jobs.
        query.topLevelOnly = true
        if let parent = parameters.get("parent") {
            let id = JobID(parent)
            guard id.isWellFormed else { throw APIError.invalid("parent", "parent is a job id") }
            query.parent = id
            query.topLevelOnly = false
        }
        if let status = parameters.get("status") {
            guard let value = JobStatus(rawValue: status) else {
                throw APIError.invalid("status", "status is one of unknown, reading, completed, failed, cancelled")
            }
            query.status = value
        }
        if let limit = parameters.get("limit") {
            guard let value = Int(limit), (1...200).contains(value) else {
                throw APIError.invalid("limit", "limit is between 1 and 200")
            }
            query.limit = value
        }
        if let cursor = parameters.get("cursor") {
            guard let value = ListCursor.decode(cursor) else {
                throw APIError.invalid("cursor", "cursor is not one this server gave")
            }
            query.after = value
        }
        // A page ends at `limit` jobs or at the first job that takes it past `pageBytes`
        // (jobs with big results could make 200 of them 10 MB); the cursor goes on from there.
        // Read in small batches, so a page of big jobs reads little more than it sends.
        let encoder = Job.makeJSONEncoder(pretty: false)
        var body = ByteBuffer(string: #"{"jobs":["#)
        var count = 0
        var last: Job?
        var full = false
        while !full {
            var batch = query
            batch.limit = min(query.limit - count, Self.listBatch)
            batch.after = last.map { JobQuery.Cursor(createdAt: $0.createdAt.milliseconds, id: $0.id) } ?? query.after
            let jobs = try await store.jobs(batch)
            for job in jobs {
                if count > 0 { body.writeString(",") }
                body.writeBytes(try encoder.encode(Self.presented(job)))
                count += 1
                last = job
                if count == query.limit || body.readableBytes >= Self.pageBytes {
                    full = true
                    break
                }
            }
            if jobs.count < batch.limit { break }
        }
        let next = full ? last.map(ListCursor.encode) : nil
        body.writeString(#"],"next_cursor":"#)
        body.writeString(next.map { #""\#($0)""# } ?? "null")
        body.writeString("}")
        return Response(
            status: .ok,
            headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: body)
        )
    }

    /// The most bytes of jobs a listing page holds (one job more than this at most).
    static let pageBytes = 1 << 20
    /// Jobs read from the store at a time while a page fills.
    static let listBatch = 25

    func cancel(_ request: Request, context: APIRequestContext) async throws -> Response {
        let key = try Self.require(.submit, context)
        let id = try Self.jobID(context)
        guard let job = try await store.job(id), Self.visible(job, to: key) else { throw APIError.noJob(id.rawValue) }
        do {
            switch try await store.cancel(id) {
            case .cancelled(let job), .requested(let job):
                return try APIResponses.json(Self.presented(job), status: .accepted)
            }
        } catch let error as JobStoreError where error.code == .conflict {
            throw APIError(.jobEnded, error.message)
        }
    }

    /// `?force=true` also runs a poison job (`worker_crashed`) again: an admin's decision, since
    /// each forced run may take more workers down.
    func retry(_ request: Request, context: APIRequestContext) async throws -> Response {
        let key = try Self.require(.submit, context)
        let id = try Self.jobID(context)
        let force: Bool
        switch request.uri.queryParameters.get("force") {
        case nil, "false": force = false
        case "true": force = true
        case .some: throw APIError.invalid("force", "force is true or false")
        }
        if force && key.scope != .admin {
            throw APIError(.forbidden, "force is for admin keys: a poison job may take more workers down")
        }
        guard let job = try await store.job(id), Self.visible(job, to: key) else { throw APIError.noJob(id.rawValue) }
        do {
            return try APIResponses.json(Self.presented(try await store.retry(id, force: force)))
        } catch let error as JobStoreError where error.code == .conflict {
            throw APIError(.jobNotRetryable, error.message)
        }
    }

    // MARK: Helpers

    /// The job as its client sees it: the idempotency key it sent, without the tenant prefix
    /// the store keeps it under.
    static func presented(_ job: Job) -> Job {
        var job = job
        if let owner = job.owner, let key = job.idempotencyKey, key.hasPrefix("api:\(owner):") {
            job.idempotencyKey = String(key.dropFirst("api:\(owner):".count))
        }
        return job
    }

    static func require(_ scope: APIScope, _ context: APIRequestContext) throws -> APIKey {
        guard let key = context.key else { throw APIError.unauthorized }
        guard key.scope >= scope else {
            throw APIError(
                .forbidden,
                "this key's scope is \(key.scope.rawValue); this needs \(scope.rawValue)"
            )
        }
        return key
    }

    package static func visible(_ job: Job, to key: APIKey) -> Bool { key.scope == .admin || job.owner == key.id }

    package static func jobID(_ context: some RequestContext) throws -> JobID {
        let text = try context.parameters.require("id")
        let id = JobID(text)
        guard id.isWellFormed else { throw APIError.noJob(String(text.prefix(64))) }
        return id
    }

    /// `?wait=30s` (or `1500ms`, `2m`, a number of seconds), at most `maximum`: exactly what the
    /// document's pattern allows, `^[0-9]+(\.[0-9]+)?(ms|s|m|h)?$` (no `1e3`, spaces, signs or
    /// capitals, which `parseDuration` alone would take).
    static func waitParameter(_ request: Request, maximum: Duration) throws -> Duration? {
        guard let text = request.uri.queryParameters.get("wait") else { return nil }
        guard Self.isWaitText(text), let wait = parseDuration(text) else {
            throw APIError.invalid("wait", "wait is a duration such as 30s, 1500ms or 2m")
        }
        return min(wait, maximum)
    }

    /// `DIGITS[.DIGITS][ms|s|m|h]`.
    static func isWaitText(_ text: String) -> Bool {
        var number = Substring(text)
        for unit in ["ms", "s", "m", "h"] where number.hasSuffix(unit) {
            number = number.dropLast(unit.count)
            break
        }
        let parts = number.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        return parts.allSatisfy { !$0.isEmpty && $0.allSatisfy { $0.isASCII && $0.isNumber } }
    }

    /// Whether a stored job is what `request` would have created (an idempotent replay).
    static func sameRequest(_ job: Job, _ request: JobRequest) -> Bool {
        job.kind == request.kind && job.input == request.input && job.output == request.output
            && job.preset == request.preset && job.range == request.range && job.priority == request.priority
            && job.metadata == request.metadata && job.webhook == request.webhook && job.owner == request.owner
            && job.maxAttempts >= request.maxAttempts && job.presetSettings == request.presetSettings
            && job.format == request.format
    }

    static func describe(_ error: DecodingError) -> APIError {
        func path(_ keys: [any CodingKey]) -> String? {
            keys.isEmpty ? nil : keys.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            let field = path(context.codingPath + [key]) ?? key.stringValue
            return .invalid(field, "\(field) is required")
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            let field = path(context.codingPath) ?? "body"
            return .invalid(field, "\(field) has the wrong type")
        case .dataCorrupted(let context):
            if let field = path(context.codingPath) {
                return .invalid(field, "\(field) is not valid: \(context.debugDescription.prefix(200))")
            }
            return APIError(.badRequest, .invalidRequest, "the body is not JSON")
        @unknown default:
            return APIError(.badRequest, .invalidRequest, "the body could not be read")
        }
    }
}

/// The opaque `next_cursor`: base64url of `CREATED_MS:ID`.
package enum ListCursor {
    package static func encode(_ job: Job) -> String {
        SecretText.base64URL(Data("\(job.createdAt.milliseconds):\(job.id.rawValue)".utf8))
    }

    package static func decode(_ text: String) -> JobQuery.Cursor? {
        guard text.utf8.count <= 200 else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64), let plain = String(data: data, encoding: .utf8) else {
            return nil
        }
        let parts = plain.split(separator: ":", maxSplits: 1)
        guard parts.count == 2, let created = Int64(parts[0]) else { return nil }
        let id = JobID(String(parts[1]))
        guard id.isWellFormed else { return nil }
        return JobQuery.Cursor(createdAt: created, id: id)
    }
}
