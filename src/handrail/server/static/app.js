// The inbox page: login, then a hash router over three views (the list, an approval, a run), all fed live by
// the event stream. Every value from the server is shown as text (see dom.js); the token typed at login goes to
// POST /api/v1/login once and is never kept (the session is an HttpOnly cookie).

import { ApiError, getMe, login, logout } from "./api.js";
import { mountDetail } from "./detail.js";
import { h, refreshRelative, replace } from "./dom.js";
import { connect } from "./events.js";
import { mountList } from "./list.js";
import { mountRun } from "./run.js";

const main = document.getElementById("main");
const state = { me: null, view: null, stopEvents: null, lastList: "#/" };

function notify(text) {
  const box = document.getElementById("notice");
  box.textContent = text;
  clearTimeout(notify.timer);
  notify.timer = setTimeout(() => {
    box.textContent = "";
  }, 8000);
}

/** A problem shown as its title and detail. */
export function problemNode(error) {
  const title = error instanceof ApiError ? error.title : "Something went wrong";
  const detail = error instanceof ApiError ? error.detail : String(error?.message || error);
  return h("div", { class: "error", role: "alert" }, h("strong", {}, title), detail ? h("p", {}, detail) : null);
}

function fail(error) {
  if (error instanceof ApiError && error.status === 401) {
    signedOut("Your session ended; log in again.");
    return;
  }
  notify(error instanceof ApiError ? `${error.title}: ${error.detail}` : String(error));
}

const ctx = { notify, fail, problemNode, get me() { return state.me; }, get lastList() { return state.lastList; } };

function parseHash() {
  const raw = location.hash.replace(/^#/, "") || "/";
  const [path, search = ""] = raw.split("?");
  const parts = path.split("/").filter(Boolean).map((p) => {
    try {
      return decodeURIComponent(p);
    } catch {
      return p;
    }
  });
  return { parts, params: new URLSearchParams(search) };
}

// What ids look like (the API's formats): a route holding anything else fetches nothing.
const APPROVAL_ID = /^ap_[0-9a-f]{32}$/;
const RUN_ID = /^(?!\.\.?$)[^\u0000-\u001f\u007f/\\]{1,500}$/; // any text but . and .. (it is encoded)

function badRoute(text) {
  replace(main, h("p", { class: "back" }, h("a", { href: state.lastList }, "← Approvals")),
    h("div", { class: "error", role: "alert" }, h("strong", {}, text)));
  main.focus();
}

function route() {
  if (!state.me) return;
  state.view?.dispose?.();
  state.view = null;
  const { parts, params } = parseHash();
  if (parts[0] === "approvals" && parts.length > 1) {
    if (parts.length === 2 && APPROVAL_ID.test(parts[1])) state.view = mountDetail(main, parts[1], ctx);
    else badRoute("This address does not name an approval: not an approval id.");
  } else if (parts[0] === "runs" && parts.length > 1) {
    if (parts.length === 2 && RUN_ID.test(parts[1])) state.view = mountRun(main, parts[1], ctx);
    else badRoute("This address does not name a run: not a run id.");
  } else if (parts.length) {
    badRoute("There is no such page here.");
  } else {
    state.lastList = location.hash || "#/";
    state.view = mountList(main, params, ctx);
  }
}

function setLive(text) {
  document.getElementById("live-state").textContent = text;
}

function signedIn(me) {
  state.me = me;
  const who = document.getElementById("whoami");
  replace(who, h("span", { class: "who-name" }, me.name), " ", h("span", { class: "who-role" }, `(${me.role})`));
  who.title = me.tools?.length ? `may decide: ${me.tools.join(", ")}` : "";
  who.hidden = false;
  document.getElementById("logout").hidden = false;
  state.stopEvents?.();
  let wasDown = false;
  state.stopEvents = connect({
    onEvent: (kind, data) => state.view?.onEvent?.(kind, data),
    onReset: () => state.view?.onReset?.(),
    onState: (s) => {
      setLive(s === "live" ? "live" : "reconnecting…");
      if (s !== "live") getMe().catch(fail); // a session that ended (token revoked) logs the page out
      else if (wasDown) state.view?.onReset?.(); // back after an outage: reload the view (its errors go)
      wasDown = s !== "live";
    },
  });
  route();
}

function signedOut(message) {
  state.me = null;
  state.view?.dispose?.();
  state.view = null;
  state.stopEvents?.();
  state.stopEvents = null;
  setLive("");
  document.getElementById("whoami").hidden = true;
  document.getElementById("logout").hidden = true;
  showLogin(message);
}

function showLogin(message) {
  const input = h("input", { id: "token", name: "token", type: "password", autocomplete: "off", required: true,
    spellcheck: "false", "aria-describedby": "token-help" });
  const error = h("div", { id: "login-error" });
  const form = h("form", { class: "login", novalidate: true },
    h("h1", {}, "Log in"),
    message ? h("p", { class: "state" }, message) : null,
    h("label", { for: "token" }, "Token"),
    input,
    h("p", { class: "help", id: "token-help" }, "A token made by ", h("code", {}, "handrail tokens add"),
      ". It is sent once to start a session and not stored by this page."),
    h("button", { type: "submit", class: "primary" }, "Log in"),
    error);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const token = input.value.trim();
    if (!token) {
      replace(error, h("p", { class: "field-error", role: "alert" }, "Enter a token."));
      input.focus();
      return;
    }
    const button = form.querySelector("button");
    button.disabled = true;
    try {
      const { data } = await login(token);
      input.value = "";
      signedIn(data.principal);
    } catch (e) {
      replace(error, problemNode(e));
      input.focus();
    } finally {
      button.disabled = false;
    }
  });
  replace(main, form);
  input.focus();
}

document.getElementById("logout").addEventListener("click", async () => {
  try {
    await logout();
  } catch (e) {
    if (!(e instanceof ApiError && e.status === 401)) {
      fail(e);
      return;
    }
  }
  signedOut("You are logged out.");
});

window.addEventListener("hashchange", route);
setInterval(() => refreshRelative(main), 15000);

(async () => {
  try {
    const { data } = await getMe();
    signedIn(data);
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) showLogin();
    else replace(main, problemNode(e));
  }
})();
