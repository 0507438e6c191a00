// Stops this process once it loses its parent, for `npm start` (bin/start.js) and for `npx damhub`
// / `npm exec damhub` (bin/damhub.js).
//
// npm forwards SIGTERM/SIGINT only to the process it started: the shell that runs the script or
// the bin (`sh -c "damhub serve"`), and that shell dies of it without passing it on. dash does not
// even exec a single command, and `exec` is not a command of cmd.exe. The hub was left running,
// orphaned (re-parented to pid 1) and still answering. So this process watches for the moment its
// parent pid changes and signals itself as the shell should have: the hub's own SIGTERM handler
// then drains and exits; another command ends as a SIGTERM ends it (test/cli/operating.test.ts).

/**
 * Whether npm started this process (npm start, npm run, npx, npm exec set npm_lifecycle_event):
 * only then is losing the parent a sign that npm was stopped. A hub started from a shell with
 * `nohup damhub serve &` outlives its shell on purpose.
 */
export function startedByNpm(env = process.env) {
  return Boolean(env.npm_lifecycle_event);
}

/** Sends this process SIGTERM, once, when its parent process changes. */
export function stopWhenOrphaned() {
  const parent = process.ppid;
  const watch = setInterval(() => {
    if (process.ppid === parent) return;
    // Once: the hub's handler is a `once`, and a second SIGTERM would kill it mid-drain.
    clearInterval(watch);
    process.kill(process.pid, 'SIGTERM');
  }, 200);
  watch.unref();
}
