// The memory browser's only script (served from this package; no inline script is
// allowed by the page's Content-Security-Policy). It does one thing: the confirmed
// deletion, a POST carrying this run's token in a header, which no other site can send.
"use strict";

function meta(name) {
  const element = document.querySelector('meta[name="' + name + '"]');
  return element ? element.getAttribute("content") : "";
}

async function forgetConfirmed(button) {
  const status = document.getElementById("forget-status");
  const body = button.dataset.turn
    ? { turn: Number(button.dataset.turn) }
    : { session: button.dataset.session };
  button.disabled = true;
  status.textContent = "Deleting…";
  const headers = { "Content-Type": "application/json" };
  headers[meta("smartsearch-token-header")] = meta("smartsearch-token");
  try {
    const response = await fetch("/forget", {
      method: "POST",
      headers: headers,
      body: JSON.stringify(body),
      credentials: "same-origin",
    });
    const answer = await response.json();
    if (!response.ok) {
      status.textContent = answer.error || "The deletion was refused.";
      button.disabled = false;
      return;
    }
    const count = answer.deleted_turn_ids.length;
    status.textContent = "Deleted " + count + (count === 1 ? " turn." : " turns.");
    status.dataset.done = "1";
    window.setTimeout(function () {
      window.location.assign(button.dataset.next || "/");
    }, 600);
  } catch (error) {
    status.textContent = "The deletion failed: " + error;
    button.disabled = false;
  }
}

document.addEventListener("DOMContentLoaded", function () {
  const button = document.getElementById("forget-confirm");
  if (button) {
    button.addEventListener("click", function () {
      forgetConfirmed(button);
    });
  }
});
