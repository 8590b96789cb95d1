// Portico Connect's end page: when it was opened by the app (the SDK's popup), it tells the app the outcome, the
// same parameters its link carries, and only to the origin that link leads to (the app's registered redirect URI).
const link = document.getElementById('return');
if (link && window.opener) {
  const back = new URL(link.href);
  window.opener.postMessage({ type: 'portico:connect', ...Object.fromEntries(back.searchParams) }, back.origin);
}
