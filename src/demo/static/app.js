// The demo partner's front end: it only listens to the picker's `select` event and shows the choice.
const picker = document.getElementById('picker');
const chosen = document.getElementById('chosen');
const theme = document.getElementById('theme');

picker.addEventListener('select', (event) => {
  const { provider, assets } = event.detail;
  document.getElementById('chosen-empty').hidden = true;
  chosen.replaceChildren(...assets.map((a) => {
    const li = document.createElement('li');
    if (a.thumbnailUrl) {
      const img = document.createElement('img');
      img.src = a.thumbnailUrl;
      img.alt = '';
      li.append(img);
    }
    const link = document.createElement('a');
    link.href = a.downloadUrl ?? '#';
    link.textContent = a.name;
    li.append(link, ` (${provider}, ${a.mimeType ?? 'unknown type'})`);
    return li;
  }));
});

theme.addEventListener('click', () => {
  const dark = picker.getAttribute('theme') !== 'dark';
  // Off is "auto", the picker's default: it follows prefers-color-scheme like the page around it.
  picker.setAttribute('theme', dark ? 'dark' : 'auto');
  theme.setAttribute('aria-pressed', String(dark));
});
