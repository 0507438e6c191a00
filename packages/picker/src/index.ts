/** @damhub/picker: registers `<damhub-picker>` (importing this module defines the element). */
export { DamhubPicker, type PickerRendition, type PickerSelectDetail } from './picker.js';
export { LOCALES, type Locale } from './i18n.js';
