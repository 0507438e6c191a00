/** Field and facet labels of the library in the six supported UI locales. */
export type UiLocale = 'en' | 'de' | 'fr' | 'es' | 'ja' | 'zh';

type Labels = Record<UiLocale, string>;

export const LABELS = {
  type: { en: 'File type', de: 'Dateityp', fr: 'Type de fichier', es: 'Tipo de archivo', ja: 'ファイルの種類', zh: '文件类型' },
  ext: { en: 'Extension', de: 'Dateiendung', fr: 'Extension', es: 'Extensión', ja: '拡張子', zh: '扩展名' },
  keyword: { en: 'Keyword', de: 'Schlagwort', fr: 'Mot-clé', es: 'Palabra clave', ja: 'キーワード', zh: '关键词' },
  year: { en: 'Year', de: 'Jahr', fr: 'Année', es: 'Año', ja: '年', zh: '年份' },
  orientation: { en: 'Orientation', de: 'Ausrichtung', fr: 'Orientation', es: 'Orientación', ja: '向き', zh: '方向' },
  image: { en: 'Image', de: 'Bild', fr: 'Image', es: 'Imagen', ja: '画像', zh: '图片' },
  video: { en: 'Video', de: 'Video', fr: 'Vidéo', es: 'Vídeo', ja: '動画', zh: '视频' },
  audio: { en: 'Audio', de: 'Audio', fr: 'Audio', es: 'Audio', ja: '音声', zh: '音频' },
  document: { en: 'Document', de: 'Dokument', fr: 'Document', es: 'Documento', ja: 'ドキュメント', zh: '文档' },
  other: { en: 'Other', de: 'Sonstige', fr: 'Autre', es: 'Otro', ja: 'その他', zh: '其他' },
  landscape: { en: 'Landscape', de: 'Querformat', fr: 'Paysage', es: 'Horizontal', ja: '横長', zh: '横向' },
  portrait: { en: 'Portrait', de: 'Hochformat', fr: 'Portrait', es: 'Vertical', ja: '縦長', zh: '纵向' },
  square: { en: 'Square', de: 'Quadratisch', fr: 'Carré', es: 'Cuadrado', ja: '正方形', zh: '方形' },
  dimensions: { en: 'Dimensions', de: 'Abmessungen', fr: 'Dimensions', es: 'Dimensiones', ja: 'サイズ', zh: '尺寸' },
  dateTimeOriginal: { en: 'Date taken', de: 'Aufnahmedatum', fr: 'Date de prise de vue', es: 'Fecha de captura', ja: '撮影日時', zh: '拍摄日期' },
  cameraModel: { en: 'Camera', de: 'Kamera', fr: 'Appareil photo', es: 'Cámara', ja: 'カメラ', zh: '相机' },
  path: { en: 'Path', de: 'Pfad', fr: 'Chemin', es: 'Ruta', ja: 'パス', zh: '路径' },
  thumbnail: { en: 'Thumbnail', de: 'Miniaturansicht', fr: 'Vignette', es: 'Miniatura', ja: 'サムネイル', zh: '缩略图' },
  preview: { en: 'Preview', de: 'Vorschau', fr: 'Aperçu', es: 'Vista previa', ja: 'プレビュー', zh: '预览' },
  original: { en: 'Original', de: 'Original', fr: 'Original', es: 'Original', ja: 'オリジナル', zh: '原始文件' },
} satisfies Record<string, Labels>;

export type LabelKey = keyof typeof LABELS;

export function label(key: LabelKey, locale: string): string {
  const l = LABELS[key] as Labels | undefined;
  return l ? (l[locale as UiLocale] ?? l.en) : key;
}

export function i18n(key: LabelKey): Record<string, string> {
  return { ...LABELS[key] };
}
