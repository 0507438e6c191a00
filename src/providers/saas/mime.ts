/** Media types by file extension, for APIs that report none (Dropbox). Unknown: application/octet-stream. */
const BY_EXT: Record<string, string> = {
  jpg: 'image/jpeg', jpeg: 'image/jpeg', png: 'image/png', gif: 'image/gif', webp: 'image/webp', tif: 'image/tiff', tiff: 'image/tiff',
  avif: 'image/avif', heic: 'image/heic', heif: 'image/heif', svg: 'image/svg+xml', bmp: 'image/bmp', psd: 'image/vnd.adobe.photoshop',
  mp4: 'video/mp4', mov: 'video/quicktime', webm: 'video/webm', mp3: 'audio/mpeg', wav: 'audio/wav',
  pdf: 'application/pdf', txt: 'text/plain', csv: 'text/csv', json: 'application/json', zip: 'application/zip',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  ai: 'application/postscript', eps: 'application/postscript', indd: 'application/x-indesign',
};

export function mimeFromName(name: string): string {
  const dot = name.lastIndexOf('.');
  return (dot > 0 && BY_EXT[name.slice(dot + 1).toLowerCase()]) || 'application/octet-stream';
}
