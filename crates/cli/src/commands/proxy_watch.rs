//! `elect-leaders proxy --config FILE`: the file's directory watched, so that a new file is
//! put in force as SIGHUP puts it, without a signal. Kubernetes mounts a ConfigMap as a
//! directory where `FILE` is a symlink into `..data`, itself a symlink that the kubelet
//! swaps in one rename to a new timestamped directory: the file is never written in place,
//! so its directory is watched (inotify on Linux, through the `notify` crate), not the file.
//!
//! A change is what [`ConfigWatch::changed`] waits for: events first, then quiet (the
//! several events of one swap, or of an editor's save, are one change), then the file's
//! bytes read through its symlinks and compared with those last seen. Anything else in the
//! directory (an audit log beside the file, an editor's swap file) reloads nothing.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::Notify;

/// Events closer than this are one change.
const QUIET: Duration = Duration::from_millis(250);

/// A directory that never falls quiet (a busy log beside the file) is looked at this long
/// after its first event all the same.
const AT_MOST: Duration = Duration::from_secs(2);

/// The configuration file's directory, watched.
pub struct ConfigWatch {
    watcher: RecommendedWatcher,
    /// Told of every event, and of every error of the watch (then the file is read again).
    events: Arc<Notify>,
    path: PathBuf,
    /// The directory the file's symlinks lead to, when it is not the file's own: watched
    /// too, so that a file linked from elsewhere and edited there is seen.
    resolved: Option<PathBuf>,
    /// The file's bytes when last read; None: it could not be read.
    seen: Option<Vec<u8>>,
}

impl ConfigWatch {
    /// Watches the directory of `path`; its bytes now are those a change is compared with.
    pub fn new(path: &Path) -> notify::Result<ConfigWatch> {
        let events = Arc::new(Notify::new());
        let told = events.clone();
        let mut watcher = notify::recommended_watcher(move |_: notify::Result<notify::Event>| {
            told.notify_one();
        })?;
        watcher.watch(&directory(path), RecursiveMode::NonRecursive)?;
        let mut watch = ConfigWatch {
            watcher,
            events,
            path: path.to_owned(),
            resolved: None,
            seen: None,
        };
        watch.seen();
        Ok(watch)
    }

    /// The directory watched, for the log.
    pub fn directory(&self) -> PathBuf {
        directory(&self.path)
    }

    /// Takes the file's bytes now as those seen: after a reload that did not come from
    /// here (SIGHUP), so that the same bytes are not reloaded twice.
    pub fn seen(&mut self) {
        self.seen = std::fs::read(&self.path).ok();
        self.follow();
    }

    /// Waits until the file's bytes differ from those last seen, and takes them as seen.
    /// Dropped while waiting (a SIGHUP came first), the change in progress is SIGHUP's to
    /// read: [`ConfigWatch::seen`] after it.
    pub async fn changed(&mut self) {
        loop {
            self.events.notified().await;
            let first = tokio::time::Instant::now();
            while first.elapsed() < AT_MOST {
                if tokio::time::timeout(QUIET, self.events.notified())
                    .await
                    .is_err()
                {
                    break;
                }
            }
            let now = std::fs::read(&self.path).ok();
            self.follow();
            if now != self.seen {
                self.seen = now;
                return;
            }
        }
    }

    /// Watches the directory the file's symlinks now lead to, when it is outside the file's
    /// own: a file linked from elsewhere and edited there. Errors are dropped: the file's
    /// own directory is watched all the same.
    fn follow(&mut self) {
        let resolved = std::fs::canonicalize(&self.path)
            .ok()
            .and_then(|p| p.parent().map(Path::to_owned));
        let own = std::fs::canonicalize(directory(&self.path)).ok();
        // A ConfigMap's timestamped directory is inside the file's own: its swaps are seen
        // there, and it is never written.
        let resolved = resolved.filter(|r| own.as_ref().is_none_or(|own| !r.starts_with(own)));
        if resolved == self.resolved {
            return;
        }
        if let Some(old) = self.resolved.take() {
            // A directory removed took its watch along (notify would log its failure).
            if old.exists() {
                let _ = self.watcher.unwatch(&old);
            }
        }
        if let Some(new) = resolved {
            if self
                .watcher
                .watch(&new, RecursiveMode::NonRecursive)
                .is_ok()
            {
                self.resolved = Some(new);
            }
        }
    }
}

/// The directory `path` is in, as given (not through its symlinks): the one a ConfigMap is
/// mounted as.
fn directory(path: &Path) -> PathBuf {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
        _ => PathBuf::from("."),
    }
}
