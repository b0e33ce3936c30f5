import Foundation
import Queue
import QueueTestKit
import Testing

@testable import Dashboard

/// The templates parse, fill and escape; the views say what a person needs.
@Suite("Dashboard pages")
struct DashboardPagesTests {
    let pages = DashboardPages()
    let key = APIKey(id: "0123456789ab", name: "ops <team>", scope: .submit, createdAt: Date())

    func job(_ status: JobStatus = .unknown, input: String = "/in/a.mov") -> Job {
        Job.sample(status: status, input: input)
    }

    @Test("every value is escaped: an input path, a key's name")
    func escaping() {
        let frame = PageFrame.signedIn(root: "", key: key, csrf: "t", onJobs: true)
        let page = pages.render(
            JobsView(
                frame: frame,
                q: "\"><script>",
                error: nil,
                tabs: [],
                countsAge: nil,
                jobs: [job(input: "/in/<img src=x onerror=alert(1)>.mov")],
                next: nil
            ),
            as: "jobs"
        )
        #expect(!page.contains("<img src=x"))
        #expect(page.contains("&lt;img src=x onerror=alert(1)&gt;"))
        #expect(!page.contains("\"><script>"))
        #expect(page.contains("ops &lt;team&gt;"))
        #expect(
            !page.contains("<script>") || page.components(separatedBy: "<script").count == 2,
            "only the page's own script tag"
        )
    }

    @Test("the layout: the script from the assets, a skip link, the sign-out form with its token")
    func layout() {
        let page = pages.render(
            MessageView(
                frame: PageFrame.signedIn(root: "../", key: key, csrf: "TOKEN", onJobs: false),
                heading: "Not found",
                message: "m"
            ),
            as: "message"
        )
        #expect(page.contains(#"<script src="../assets/app.js" defer></script>"#))
        #expect(page.contains(##"<a class="skip" href="#main">"##))
        #expect(page.contains(#"<input type="hidden" name="csrf" value="TOKEN">"#))
        #expect(page.hasPrefix("<!doctype html>"))
        let signedOut = pages.render(SignInView(root: "", csrf: "T", error: "bad"), as: "signin")
        #expect(!signedOut.contains("Sign out") && signedOut.contains(#"role="alert">bad<"#))
    }

    @Test("a job's page offers the actions that apply, to a key that may act")
    func actions() {
        func view(_ status: JobStatus, canAct: Bool = true) -> JobView {
            JobView(
                frame: PageFrame(root: "../"),
                csrf: "t",
                job: job(status),
                children: [],
                audit: [],
                canAct: canAct,
                now: Date(milliseconds: 1_795_780_900_000)
            )
        }
        #expect(view(.unknown).canCancel && !view(.unknown).canRetry)
        #expect(view(.failed).canRetry && !view(.failed).canCancel)
        #expect(view(.cancelled).canRetry)
        #expect(!view(.completed).canAct)
        #expect(!view(.unknown, canAct: false).canAct)
        let page = pages.render(view(.failed), as: "job")
        #expect(page.contains(#"action="../jobs/0192f000-0000-7000-8000-000000000001/retry""#))
        #expect(!page.contains("/cancel\""))
    }

    @Test("why a job waits")
    func waiting() {
        let now = Date(milliseconds: 1_795_780_900_000)
        var queued = job()
        #expect(JobView.waiting(queued, now: now)?.hasPrefix("Waiting for a worker") == true)
        #expect(JobView.waiting(queued, now: now, ahead: 0)?.hasSuffix(" It is next.") == true)
        #expect(JobView.waiting(queued, now: now, ahead: 1)?.hasSuffix(" 1 job comes before it.") == true)
        #expect(JobView.waiting(queued, now: now, ahead: 12)?.hasSuffix(" 12 jobs come before it.") == true)
        #expect(JobView.waiting(queued, now: now, ahead: 1000)?.hasSuffix(" 1000 or more jobs come before it.") == true)
        // A tenant's count is of its own jobs, and says so.
        for (count, text) in [
            (0, " None of your jobs comes before it"), (1, " 1 of your jobs comes before it"),
            (7, " 7 of your jobs come before it"), (1000, " 1000 or more of your jobs come before it"),
        ] {
            let line = JobView.waiting(queued, now: now, ahead: count, aheadOwnOnly: true)
            #expect(line?.contains(text + " (other keys' jobs are not counted).") == true, "\(count): \(line ?? "")")
        }
        queued.runAt = now.addingTimeInterval(30)
        #expect(JobView.waiting(queued, now: now)?.hasPrefix("Waiting to be retried") == true)
        var running = job(.reading)
        running.worker = "w1"
        running.attempt = 2
        #expect(JobView.waiting(running, now: now) == "Running on w1, attempt 2 of 3.")
        let renewed = JobView.waiting(running, now: now, leaseExpiry: now.addingTimeInterval(20))
        #expect(
            renewed == "Running on w1, attempt 2 of 3. Its lease runs to 11-27 12:02:00 UTC; each heartbeat renews it."
        )
        let lapsed = JobView.waiting(running, now: now, leaseExpiry: now.addingTimeInterval(-1))
        #expect(lapsed?.hasSuffix("another worker will take it over.") == true)
        running.cancelRequested = true
        #expect(JobView.waiting(running, now: now)?.hasPrefix("Cancelling") == true)
        #expect(JobView.waiting(job(.completed), now: now) == nil)
    }

    @Test("the timeline: each attempt that ended badly, then the job's own unless it is one of them")
    func timeline() {
        let start = Date(milliseconds: 1_795_780_800_000)
        var running = job(.reading)
        running.attempt = 3
        running.worker = "w3"
        running.startedAt = start.addingTimeInterval(60)
        let attempts = [
            JobAttempt(
                attempt: 1,
                worker: "w1",
                startedAt: start.addingTimeInterval(1),
                endedAt: start.addingTimeInterval(2),
                outcome: "unknown",
                errorCode: .outputUnwritable,
                errorMessage: "/out is full"
            ),
            JobAttempt(
                attempt: 2,
                worker: "w2",
                startedAt: start.addingTimeInterval(3),
                endedAt: start.addingTimeInterval(60),
                outcome: JobAttempt.takenOver,
                errorCode: .leaseLost,
                errorMessage: nil
            ),
        ]
        #expect(
            JobView.timeline(running, attempts: attempts).map(\.what) == [
                "Submitted", "Attempt 1 started on w1",
                "Attempt 1 on w1 failed, queued again: output_unwritable (/out is full)",
                "Attempt 2 started on w2", "Attempt 2 on w2 lost its lease: lease_lost", "Started on w3 (attempt 3)",
            ]
        )
        var failed = job(.failed)
        failed.attempt = 1
        failed.finishedAt = start.addingTimeInterval(2)
        let last = JobAttempt(
            attempt: 1,
            worker: "w1",
            startedAt: start.addingTimeInterval(1),
            endedAt: start.addingTimeInterval(2),
            outcome: "failed",
            errorCode: .inputUnreadable,
            errorMessage: "no such file"
        )
        #expect(
            JobView.timeline(failed, attempts: [last]).map(\.what) == [
                "Submitted", "Attempt 1 started on w1",
                "Attempt 1 on w1 ended: failed: input_unreadable (no such file)",
            ],
            "the job's own end is the attempt's, once"
        )
    }

    @Test("a running job's pace: frames per second of its video, speed when its length is known, time left")
    func pace() {
        let now = Date(milliseconds: 1_795_780_900_000)
        var running = job(.reading)
        #expect(JobPace(running, now: now) == nil, "no start time")
        running.startedAt = now.addingTimeInterval(-10)
        running.progress = 0.25
        running.tracks = [
            JobTrack(
                index: 0,
                sourceIndex: 0,
                mediaType: "video",
                status: .reading,
                codec: "h264",
                read: 300,
                written: 250
            ),
            JobTrack(
                index: 1,
                sourceIndex: 1,
                mediaType: "audio",
                status: .reading,
                codec: "aac",
                read: 900,
                written: 900
            ),
        ]
        let pace = JobPace(running, now: now)
        #expect(pace?.framesPerSecond == 25, "audio frames are not counted")
        #expect(pace?.speed == nil, "the length is not known")
        #expect(pace?.secondsLeft == 30)
        #expect(pace?.text == "25 fps, about 30 s left")
        running.range = Job.Range(start: 0, duration: 120)
        #expect(JobPace(running, now: now)?.text == "25 fps, 3.0× real time, about 30 s left")
        running.progress = 0.001
        running.tracks = []
        #expect(JobPace(running, now: now)?.text == "0.0× real time", "too early for time left; no frames yet")
        #expect(JobPace(job(.completed), now: now) == nil)
        #expect(JobPace.fps(7.25) == "7.2 fps" && JobPace.fps(142.4) == "142 fps")
    }

    @Test("tabs: the default view, each status by its CLI name, all; counts when given")
    func tabs() {
        let tabs = JobsView.tabs(q: "status:failed", counts: [.unknown: 2, .reading: 1, .failed: 4]) { "?q=\($0)" }
        #expect(tabs.map(\.label) == ["Not ended", "Queued", "Running", "Completed", "Failed", "Cancelled", "All"])
        #expect(tabs.first { $0.current }?.label == "Failed")
        #expect(tabs.map(\.count) == [3, 2, 1, 0, 4, 0, 7])
        #expect(JobsView.tabs(q: "", counts: nil) { $0 }.allSatisfy { $0.count == nil })
    }
}
