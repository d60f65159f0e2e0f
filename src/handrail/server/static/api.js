// The API under /api/v1: the session cookie goes with every request (same origin), errors become ApiError.

export const API = "/api/v1";

/** A problem details answer (or a network failure: status 0). */
export class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.status = status;
    this.title = problem.title || (status ? `HTTP ${status}` : "Network error");
    this.detail = problem.detail || "";
    this.errors = Array.isArray(problem.errors) ? problem.errors : [];
    this.problem = problem;
  }
}

/** fetch JSON: resolves {data, response}; rejects with ApiError. */
export async function request(path, { method = "GET", body, headers = {} } = {}) {
  const init = { method, headers: { Accept: "application/json", ...headers }, credentials: "same-origin" };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers["Content-Type"] = "application/json";
  }
  let response;
  try {
    response = await fetch(API + path, init);
  } catch (error) {
    throw new ApiError(0, { title: "Network error", detail: "The server did not answer; check the connection." });
  }
  if (response.status === 204) return { data: null, response };
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = {};
  }
  if (!response.ok) throw new ApiError(response.status, data || {});
  return { data, response };
}

/** The query string of the defined entries of params. */
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") q.set(k, v);
  const text = q.toString();
  return text ? `?${text}` : "";
}

export const getMe = () => request("/me");
export const login = (token) => request("/login", { method: "POST", body: { token } });
export const logout = () => request("/logout", { method: "POST" });
export const listApprovals = (params) => request(`/approvals${query(params)}`);
export const getApproval = (id, params = {}) => request(`/approvals/${encodeURIComponent(id)}${query(params)}`);
export const getAudit = (id) => request(`/approvals/${encodeURIComponent(id)}/audit`);
export const getPreview = (id) => request(`/approvals/${encodeURIComponent(id)}/preview`);
export const getRun = (id) => request(`/runs/${encodeURIComponent(id)}`);

/** POST a decision with If-Match (the ETag read) and an Idempotency-Key. */
export function decide(id, body, etag, key) {
  const headers = { "Idempotency-Key": key };
  if (etag) headers["If-Match"] = etag;
  return request(`/approvals/${encodeURIComponent(id)}/decision`, { method: "POST", body, headers });
}
