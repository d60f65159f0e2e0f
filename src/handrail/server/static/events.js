// The service's event stream (Server-Sent Events at /api/v1/events, authenticated by the session cookie).
// EventSource reconnects by itself and sends Last-Event-ID, so the server replays what was missed; when the
// server no longer holds those events it sends `reset` and the page lists again. A stream the browser gave up on
// (the server was down, or answered an error) is reopened after a pause with ?last_event_id= the last id seen.

export const KINDS = [
  "approval.created", "approval.voted", "approval.decided", "approval.expired", "approval.cancelled",
  "run.started", "run.paused", "run.resumed", "run.finished", "run.failed",
];

/**
 * Open the stream. onEvent(kind, data) for each event, onReset() on `reset`, onState("live" | "reconnecting").
 * Returns a function that closes it.
 */
export function connect({ onEvent, onReset, onState }) {
  let source = null;
  let lastId = null;
  let timer = null;
  let closed = false;
  let retry = 1000;

  const open = () => {
    const url = lastId === null ? "/api/v1/events" : `/api/v1/events?last_event_id=${encodeURIComponent(lastId)}`;
    source = new EventSource(url, { withCredentials: true });
    source.onopen = () => {
      retry = 1000;
      onState("live");
    };
    source.onerror = () => {
      if (closed) return;
      onState("reconnecting");
      if (source.readyState === EventSource.CLOSED) {
        timer = setTimeout(open, retry);
        retry = Math.min(retry * 2, 30000);
      }
    };
    for (const kind of KINDS) {
      source.addEventListener(kind, (event) => {
        if (event.lastEventId) lastId = event.lastEventId;
        let data = {};
        try {
          data = JSON.parse(event.data);
        } catch {
          return;
        }
        onEvent(kind, data);
      });
    }
    source.addEventListener("reset", (event) => {
      if (event.lastEventId) lastId = event.lastEventId;
      onReset();
    });
  };
  open();
  return () => {
    closed = true;
    clearTimeout(timer);
    source?.close();
  };
}
