// Portico Connect's picker (docs/connecting.md, "Portico Connect"): the patient types, the page asks the public
// catalog search (same origin, debounced), shows the brands as a listbox (logo, name, place, endpoint status) and
// sends the browser on with the chosen brand. No framework and no third-party request: the page's CSP allows only
// this file and its stylesheet. Keyboard: arrows move through the results, Enter chooses, Escape clears.
const DEBOUNCE_MS = 120;
const SEARCH = '/api/sdk/v1/catalog/brands';
const STATUS_WORDS = {
  UP: 'Available',
  DEGRADED: 'Slow to answer',
  DOWN: 'Unavailable now',
  UNKNOWN: 'Not checked yet',
};

const form = document.getElementById('search');
const input = document.getElementById('q');
input.maxLength = 200;
const near = document.getElementById('near');
const list = document.getElementById('results');
const status = document.getElementById('status');
let timer;
let active = -1;
let shown = [];
let asked = 0;

const place = (brand) =>
  [brand.city && brand.state ? `${brand.city}, ${brand.state}` : brand.city || brand.state, brand.disambiguation]
    .filter(Boolean)
    .join(' · ');

function choose(brand) {
  const url = new URL(window.location.href);
  url.search = '';
  url.searchParams.set('brand', brand.id);
  window.location.assign(url.href);
}

function setActive(index) {
  const options = list.querySelectorAll('[role="option"]');
  options.forEach((option, i) => option.setAttribute('aria-selected', String(i === index)));
  active = index;
  if (index >= 0 && options[index]) {
    input.setAttribute('aria-activedescendant', options[index].id);
    options[index].scrollIntoView({ block: 'nearest' });
  } else input.removeAttribute('aria-activedescendant');
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function render(brands, query) {
  shown = brands;
  list.replaceChildren(
    ...brands.map((brand, i) => {
      const option = element('li', 'option');
      option.id = `option-${i}`;
      option.setAttribute('role', 'option');
      option.setAttribute('aria-selected', 'false');
      const logo = element('img', 'logo');
      logo.alt = '';
      logo.width = 40;
      logo.height = 40;
      if (brand.logoUrl) logo.src = `${brand.logoUrl}${brand.logoUrl.includes('?') ? '&' : '?'}size=64`;
      const text = element('span', 'text');
      text.append(element('span', 'name', brand.name));
      const where = [place(brand), brand.fuzzy ? 'Close match' : ''].filter(Boolean).join(' · ');
      if (where) text.append(element('span', 'place', where));
      const state = brand.endpoint?.status ?? 'UNKNOWN';
      option.append(logo, text, element('span', `endpoint endpoint-${state.toLowerCase()}`, STATUS_WORDS[state]));
      option.addEventListener('click', () => choose(brand));
      return option;
    }),
  );
  input.setAttribute('aria-expanded', String(brands.length > 0));
  setActive(-1);
  if (brands.length === 0) status.textContent = query ? `No health system matches “${query}”.` : '';
  else if (brands.every((b) => b.fuzzy)) status.textContent = `No exact match. Did you mean ${brands[0].name}?`;
  else status.textContent = `${brands.length} health system${brands.length === 1 ? '' : 's'} found.`;
}

/** Forgets what was shown (a failed search must not leave the last query's results to choose from). */
function clear(message) {
  clearTimeout(timer);
  asked++; // an answer still on its way is not shown
  render([], '');
  status.textContent = message;
}

async function search() {
  const query = input.value.trim();
  const zip = near.value.trim();
  const ask = ++asked;
  if (query.length < 2 && !/^\d{5}$/.test(zip)) return render([], '');
  const params = new URLSearchParams({ limit: '10' });
  if (query) params.set('q', query);
  if (/^\d{5}$/.test(zip)) params.set('near', zip);
  try {
    const answer = await fetch(`${SEARCH}?${params}`, { headers: { accept: 'application/json' } });
    if (ask !== asked) return; // a later keystroke asked since
    if (!answer.ok) {
      clear(
        answer.status === 400
          ? 'Check the search and the ZIP code (five digits of a US ZIP code).'
          : 'The search is not answering; try again.',
      );
      return;
    }
    const body = await answer.json();
    if (ask === asked) render(body.brands, query);
  } catch {
    if (ask === asked) clear('The search is not answering; try again.');
  }
}

function schedule() {
  clearTimeout(timer);
  timer = setTimeout(search, DEBOUNCE_MS);
}

input.addEventListener('input', schedule);
near.addEventListener('input', schedule);
form.addEventListener('submit', (event) => {
  event.preventDefault();
  if (active >= 0 && shown[active]) choose(shown[active]);
  else if (shown.length === 1) choose(shown[0]);
  else search();
});
input.addEventListener('keydown', (event) => {
  if (event.key === 'ArrowDown' && shown.length > 0) {
    event.preventDefault();
    setActive(Math.min(active + 1, shown.length - 1));
  } else if (event.key === 'ArrowUp' && shown.length > 0) {
    event.preventDefault();
    setActive(Math.max(active - 1, 0));
  } else if (event.key === 'Enter' && active >= 0 && shown[active]) {
    event.preventDefault();
    choose(shown[active]);
  } else if (event.key === 'Escape') {
    // The first Escape closes the list and keeps the text; the second clears it (the combobox pattern).
    if (input.getAttribute('aria-expanded') === 'true') {
      clearTimeout(timer);
      asked++;
      list.replaceChildren();
      input.setAttribute('aria-expanded', 'false');
      setActive(-1);
    } else {
      input.value = '';
      clear('');
    }
  }
});
document.documentElement.classList.add('scripted');
input.focus();
