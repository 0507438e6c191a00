/** @damhub/picker: registers `<damhub-picker>` (importing this module defines the element). */
export { DamhubPicker, type PickerDestinationDetail, type PickerRendition, type PickerSelectDetail, type PickerUploadDetail } from './picker.js';
export { LOCALES, type Locale } from './i18n.js';
