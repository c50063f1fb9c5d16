// The console's own script, served from the package: the pages hold no inline script.

// "Copy": the text of the element a button names, to the clipboard.
for (const button of document.querySelectorAll('button[data-copy]')) {
  button.addEventListener('click', async () => {
    const source = document.getElementById(button.dataset.copy);
    const state = document.getElementById('copy-state');
    try {
      await navigator.clipboard.writeText(source.textContent);
      if (state) state.textContent = 'Copied.';
    } catch {
      // No clipboard (a page not served from a secure context): select the text for the reader to copy.
      const range = document.createRange();
      range.selectNodeContents(source);
      const selection = getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      if (state) state.textContent = 'Selected: press Ctrl+C.';
    }
  });
}
