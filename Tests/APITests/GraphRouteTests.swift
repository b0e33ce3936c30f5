import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Queue
import Testing

/// `POST /v1/jobs` with the graph fields (issue 27): `also` and `split` reach the stored job;
/// a wrong one is refused naming it, and nothing is queued.
@Suite("Job graphs over the API")
struct GraphRouteTests {
    typealias Routes = APIRouteTests

    @Test("also and split are stored with the job; a wrong one is 422 naming it")
    func alsoAndSplit() async throws {
        let f = try await Routes.Fixture()
        defer { f.directory.remove() }
        try await f.app.test(.router) { client in
            func post(_ extra: String) async throws -> TestResponse {
                try await client.execute(
                    uri: "/v1/jobs",
                    method: .post,
                    headers: Routes.headers(f.submit),
                    body: f.body(input: "https://media.example/in.mov", extra: extra)
                )
            }
            var response = try await post(#","split":"soon""#)
            #expect(Routes.errorCode(response) == ("invalid_request", "split"))
            response = try await post(#","also":[{"kind":"waveform","waveform":{"pixelsPerSecond":0}}]"#)
            #expect(Routes.errorCode(response).field == "also[0].waveform.pixelsPerSecond", "\(Routes.json(response))")
            response = try await post(#","also":["gif"]"#)
            #expect(Routes.errorCode(response).field == "also[0].kind")
            #expect(try await f.store.jobs(status: nil, limit: 10).isEmpty, "a refused request queued a job")

            response = try await post(#","split":"30s","also":["thumbnails"]"#)
            #expect(Routes.errorCode(response) == ("invalid_request", "also"), "one level of graph")
            #expect(try await f.store.jobs(status: nil, limit: 10).isEmpty, "a refused request queued a job")
            // A job's role is the server's to give: a body that claims to be a part of another's
            // graph is a job by itself (the body's fields the API does not know are ignored).
            response = try await post(#","role":{"child":{"part":{"part":"video","index":0}}}"#)
            #expect(response.status == .created, "\(String(buffer: response.body))")
            let claimed = try #require(Routes.json(response)["id"] as? String)
            #expect(try await f.store.job(JobID(claimed))?.role == .standalone)
            #expect(try await f.store.job(JobID(claimed))?.parent == nil)
            _ = try await f.store.cancel(JobID(claimed))

            response = try await post(#","split":"30s""#)
            #expect(response.status == .created, "\(String(buffer: response.body))")
            let split = try #require(Routes.json(response)["id"] as? String)
            #expect(try await f.store.job(JobID(split))?.role == .parent(.split(.string("30s"))))
            response = try await post(#","also":["thumbnails",{"kind":"waveform","output":"peaks"}]"#)
            #expect(response.status == .created, "\(String(buffer: response.body))")
            let id = try #require(Routes.json(response)["id"] as? String)
            let job = try #require(try await f.store.job(JobID(id)))
            guard case .parent(.outputs(let plan)) = job.role, let also = plan.arrayValue else {
                Issue.record("a job with also is not a parent with outputs: \(job.role)")
                return
            }
            #expect(also.compactMap { $0["kind"]?.stringValue } == ["thumbnails", "waveform"])
            // An API key's extra outputs stay in its own directory, as its output does.
            #expect(also.compactMap { $0["output"]?.stringValue } == ["out.thumbnails", "peaks"])
        }
    }
}
